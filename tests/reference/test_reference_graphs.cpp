// Runs the shared graph vectors (tests/vectors/graphs, written by the numpy reference interpreter)
// through the C++ reference executor: the two implementations checked against each other.
#include <QtTest/QtTest>

#include <boost/json.hpp>

#include <cmath>
#include <fstream>
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
};

QTEST_APPLESS_MAIN(TestReferenceGraphs)
#include "test_reference_graphs.moc"
