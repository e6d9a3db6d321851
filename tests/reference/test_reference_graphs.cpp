// Runs the shared graph vectors (tests/vectors/graphs, written by the numpy reference interpreter)
// through the C++ reference executor: the two implementations checked against each other.
#include <QtTest/QtTest>

#include <boost/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"

using namespace goblin::core;
namespace json = boost::json;

namespace {

const std::string kDir = std::string(GOBLIN_SOURCE_DIR) + "/tests/vectors/graphs/";

json::value readJson(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return json::parse(text.str());
}

Tensor tensorOf(const json::value& value) {
    return graph::decodeTensorJson(json::serialize(value), std::size_t{1} << 24).value();
}

// Exact where rtol = atol = 0 (floats: equal values, or both NaN).
bool close(double want, double got, double rtol, double atol) {
    if (std::isnan(want) || std::isnan(got))
        return std::isnan(want) && std::isnan(got);
    if (std::isinf(want) || std::isinf(got))
        return want == got;
    return std::abs(want - got) <= atol + rtol * std::abs(want);
}

template <class T>
QString compare(const Tensor& want, const Tensor& got, double rtol, double atol) {
    for (std::size_t i = 0; i < want.values<T>().size(); ++i) {
        const auto w = static_cast<double>(want.values<T>()[i]);
        const auto g = static_cast<double>(got.values<T>()[i]);
        if (!close(w, g, rtol, atol))
            return QStringLiteral("element %1: want %2, got %3")
                .arg(i)
                .arg(w, 0, 'g', 17)
                .arg(g, 0, 'g', 17);
    }
    return {};
}

} // namespace

class TestReferenceGraphs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void vectors_data() {
        QTest::addColumn<QString>("file");
        const json::value manifest = readJson(kDir + "manifest.json");
        for (const auto& name : manifest.at("vectors").as_array())
            QTest::newRow(name.as_string().c_str()) << QString::fromUtf8(name.as_string().c_str());
    }
    void vectors() {
        QFETCH(QString, file);
        const json::value vector = readJson(kDir + file.toStdString());
        auto decoded = graph::decodeGraph(json::serialize(vector.at("graph")));
        QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().message.c_str());
        auto plan = graph::validateGraph(*decoded);
        QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
        std::vector<Tensor> inputs;
        for (const auto& input : vector.at("inputs").as_array())
            inputs.push_back(tensorOf(input));
        auto outputs = goblin::reference::runGraph(*decoded, *plan, inputs);
        if (const auto* error = vector.as_object().if_contains("error")) {
            QVERIFY(!outputs.has_value());
            QCOMPARE(goblin::wireName(outputs.error().code), std::string_view(error->as_string()));
            return;
        }
        QVERIFY2(outputs.has_value(), outputs ? "" : outputs.error().message.c_str());
        const auto& expected = vector.at("expected").as_array();
        QCOMPARE(outputs->size(), expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
            const Tensor want = tensorOf(expected[i]);
            const Tensor& got = (*outputs)[i];
            QCOMPARE(got.dtype(), want.dtype());
            QCOMPARE(got.shape(), want.shape());
            const double rtol = expected[i].at("rtol").to_number<double>();
            const double atol = expected[i].at("atol").to_number<double>();
            QString mismatch;
            switch (want.dtype()) {
            case DType::F32:
                mismatch = compare<float>(want, got, rtol, atol);
                break;
            case DType::F64:
                mismatch = compare<double>(want, got, rtol, atol);
                break;
            case DType::I32:
                mismatch = compare<std::int32_t>(want, got, 0, 0);
                break;
            case DType::I64:
                mismatch = compare<std::int64_t>(want, got, 0, 0);
                break;
            case DType::Bool:
                mismatch = compare<bool>(want, got, 0, 0);
                break;
            }
            QVERIFY2(mismatch.isEmpty(),
                     qPrintable(QStringLiteral("output %1: ").arg(i) + mismatch));
        }
    }

    // Each value's last reader, outputs never; the executor drops what it no longer needs and
    // still returns every output: an input listed as an output, a value read twice by one node,
    // and a reshape that shares its input's storage.
    void valuesAreDroppedAfterTheirLastUse() {
        auto decoded = graph::decodeGraph(R"({"catalog": 3,
            "inputs": [{"id": 0, "dtype": "f32", "shape": [2, 3]}],
            "nodes": [{"id": 1, "op": "neg", "args": [0], "attrs": {}},
                      {"id": 2, "op": "mul", "args": [1, 1], "attrs": {}},
                      {"id": 3, "op": "reshape", "args": [2], "attrs": {"shape": [3, 2]}},
                      {"id": 4, "op": "relu", "args": [1], "attrs": {}}],
            "outputs": [3, 0]})");
        QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().message.c_str());
        auto plan = graph::validateGraph(*decoded);
        QVERIFY(plan.has_value());
        const auto last = goblin::reference::lastUses(*decoded, *plan);
        const auto stepOf = [&](graph::ValueId id) {
            for (std::size_t step = 0; step < plan->order.size(); ++step)
                if (decoded->nodes[plan->order[step]].id == id)
                    return step;
            return std::size_t{999};
        };
        const std::size_t never = std::numeric_limits<std::size_t>::max();
        QCOMPARE(last.at(0), never); // read by neg, but an output
        QCOMPARE(last.at(1), std::max(stepOf(2), stepOf(4)));
        QCOMPARE(last.at(2), stepOf(3));
        QCOMPARE(last.at(3), never);
        QVERIFY(!last.contains(4)); // nobody reads it

        auto x = Tensor::allocate(DType::F32, {2, 3}).value();
        for (std::size_t i = 0; i < 6; ++i)
            x.values<float>()[i] = static_cast<float>(i) - 2.5f;
        auto outputs = goblin::reference::runGraph(*decoded, *plan, std::vector<Tensor>{x});
        QVERIFY2(outputs.has_value(), outputs ? "" : outputs.error().message.c_str());
        QCOMPARE(outputs->size(), std::size_t{2});
        QCOMPARE((*outputs)[0].shape(), (Shape{3, 2}));
        for (std::size_t i = 0; i < 6; ++i) {
            const float v = x.values<float>()[i];
            QCOMPARE((*outputs)[0].values<float>()[i], v * v);
            QCOMPARE((*outputs)[1].values<float>()[i], v);
        }
    }
};

QTEST_APPLESS_MAIN(TestReferenceGraphs)
#include "test_reference_graphs.moc"
