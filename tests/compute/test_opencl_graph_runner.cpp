// goblin-run-graph's contract (app/graph-runner): frames in, frames out, exit 0 / 2 with
// "error: <code>: <message>" / 1 for usage errors — on the CPU reference and on OpenCL device 0
// (skipped without a device unless GOBLIN_REQUIRE_OPENCL=1).
#include <QtTest/QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include "goblin/compute/opencl_devices.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/tensor_frame.hpp"
#include "goblin/reference/graph_executor.hpp"

using namespace goblin::core;

namespace {

struct Outcome {
    int exitCode = -1;
    QByteArray stderrText;
    QByteArray outputs;
};

QByteArray frames(const std::vector<Tensor>& tensors) {
    QByteArray bytes;
    for (const Tensor& tensor : tensors) {
        const auto frame = encodeTensorFrame(tensor);
        bytes.append(reinterpret_cast<const char*>(frame.data()),
                     static_cast<qsizetype>(frame.size()));
    }
    return bytes;
}

Tensor i64Tensor(std::vector<std::int64_t> values) {
    Tensor tensor =
        Tensor::allocate(DType::I64, {static_cast<std::int64_t>(values.size())}).value();
    std::copy(values.begin(), values.end(), tensor.values<std::int64_t>().begin());
    return tensor;
}

// floor_divide(a, b) and a + b, on i64 vectors of 4.
graph::Graph divisionGraph() {
    graph::Graph g;
    g.inputs = {{0, {DType::I64, {4}}}, {1, {DType::I64, {4}}}};
    g.nodes = {{2, ops::OpCode::FloorDivide, {0, 1}, {}}, {3, ops::OpCode::Add, {0, 1}, {}}};
    g.outputs = {2, 3};
    return g;
}

} // namespace

class TestOpenClGraphRunner : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    QString path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }

    static void write(const QString& file, const QByteArray& bytes) {
        QFile out(file);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(bytes);
    }

    Outcome run(const QStringList& arguments) {
        QProcess process;
        QFile::remove(path("out.bin"));
        process.start(QStringLiteral(GOBLIN_RUN_GRAPH), arguments);
        process.waitForFinished(120000);
        Outcome outcome{process.exitCode(), process.readAllStandardError(), {}};
        QFile out(path("out.bin"));
        if (out.open(QIODevice::ReadOnly))
            outcome.outputs = out.readAll();
        return outcome;
    }

    QStringList argumentsFor(const QString& backend) const {
        return {"--backend", backend,        "--graph",   path("g.json"),
                "--inputs",  path("in.bin"), "--outputs", path("out.bin")};
    }

    QByteArray expectedOutputs(const std::vector<Tensor>& inputs) {
        const auto g = divisionGraph();
        auto outputs = goblin::reference::runGraph(g, graph::validateGraph(g).value(), inputs);
        return outputs ? frames(*outputs) : QByteArray();
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        write(path("g.json"), QByteArray::fromStdString(graph::encodeGraph(divisionGraph())));
    }

    void cpuAndOpenClWriteTheReferenceFrames() {
        const std::vector<Tensor> inputs{i64Tensor({7, -7, 9, -9}), i64Tensor({2, 2, -4, -4})};
        write(path("in.bin"), frames(inputs));
        const QByteArray want = expectedOutputs(inputs);
        const Outcome cpu = run(argumentsFor("cpu"));
        QCOMPARE(cpu.exitCode, 0);
        QCOMPARE(cpu.outputs, want);
        auto devices = goblin::compute::listOpenClDevices();
        if (!devices || devices->empty()) {
            if (qEnvironmentVariableIntValue("GOBLIN_REQUIRE_OPENCL") == 1)
                QFAIL("no OpenCL device, but GOBLIN_REQUIRE_OPENCL=1");
            QSKIP("no OpenCL device on this machine: the CPU backend was checked");
        }
        const Outcome opencl = run(argumentsFor("opencl:0"));
        QCOMPARE(opencl.exitCode, 0);
        QCOMPARE(opencl.outputs, want);
        QVERIFY2(!opencl.stderrText.contains("note: ran on the CPU reference"),
                 opencl.stderrText.constData());
    }

    void runtimeAndValidationErrorsExitTwo() {
        write(path("in.bin"), frames({i64Tensor({1, 2, 3, 4}), i64Tensor({1, 0, 1, 1})}));
        const Outcome zero = run(argumentsFor("cpu"));
        QCOMPARE(zero.exitCode, 2);
        QVERIFY2(zero.stderrText.startsWith(
                     "error: invalid_input: node 2: floor_divide: integer division by zero"),
                 zero.stderrText.constData());
        write(path("in.bin"), frames({i64Tensor({1, 2, 3, 4})}));
        const Outcome missingInput = run(argumentsFor("cpu"));
        QCOMPARE(missingInput.exitCode, 2);
        QVERIFY(missingInput.stderrText.startsWith("error: invalid_input: "));
        write(path("in.bin"), "not a frame");
        QVERIFY(run(argumentsFor("cpu")).stderrText.startsWith("error: invalid_frame: "));
        write(path("bad.json"),
              R"({"catalog": 3, "inputs": [], "nodes": [{"id": 0, "op": "frobnicate"}]})");
        const Outcome badGraph =
            run({"--backend", "cpu", "--graph", path("bad.json"), "--outputs", path("out.bin")});
        QCOMPARE(badGraph.exitCode, 2);
        QVERIFY2(badGraph.stderrText.startsWith("error: invalid_message: "),
                 badGraph.stderrText.constData());
        const Outcome noFile = run(
            {"--backend", "cpu", "--graph", path("missing.json"), "--outputs", path("out.bin")});
        QCOMPARE(noFile.exitCode, 2);
        QVERIFY(noFile.stderrText.startsWith("error: "));
    }

    void usageErrorsExitOne() {
        QCOMPARE(run({}).exitCode, 1);
        QCOMPARE(run({"--backend", "gpu", "--graph", path("g.json"), "--outputs", path("out.bin")})
                     .exitCode,
                 1);
        QCOMPARE(
            run({"--backend", "opencl:x", "--graph", path("g.json"), "--outputs", path("out.bin")})
                .exitCode,
            1);
        const Outcome unknown = run({"--backend", "cpu", "--graph", path("g.json"), "--outputs",
                                     path("out.bin"), "--fast"});
        QCOMPARE(unknown.exitCode, 1);
        QVERIFY(unknown.stderrText.contains("usage: goblin-run-graph"));
        QCOMPARE(run({"--backend", "cpu", "--graph"}).exitCode, 1);
    }
};

QTEST_GUILESS_MAIN(TestOpenClGraphRunner)
#include "test_opencl_graph_runner.moc"
