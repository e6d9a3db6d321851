// Tests of the tensor frame codec: round trips and the shared vectors of tests/vectors/.
#include <QtTest/QtTest>

#include <QFile>

#include <cstring>
#include <string>

#include <boost/json.hpp>

#include "goblin/core/tensor_frame.hpp"

using goblin::ErrorCode;
using goblin::core::decodeTensorFrame;
using goblin::core::DType;
using goblin::core::encodeTensorFrame;
using goblin::core::encodeTensorFramePrefix;
using goblin::core::FrameLimits;
using goblin::core::Shape;
using goblin::core::Tensor;

namespace json = boost::json;

namespace {

constexpr std::size_t kOneGiB = std::size_t{1} << 30;

// Element i of any dtype, as a double (every test value is exactly representable).
double elementAt(const Tensor& tensor, std::size_t i) {
    switch (tensor.dtype()) {
    case DType::F32:
        return static_cast<double>(tensor.values<float>()[i]);
    case DType::F64:
        return tensor.values<double>()[i];
    case DType::I32:
        return tensor.values<std::int32_t>()[i];
    case DType::I64:
        return static_cast<double>(tensor.values<std::int64_t>()[i]);
    case DType::Bool:
        return static_cast<double>(std::to_integer<int>(tensor.bytes()[i]));
    }
    return 0.0;
}

Tensor patternTensor(DType dtype, Shape shape) {
    Tensor tensor = Tensor::allocate(dtype, std::move(shape)).value();
    for (std::size_t i = 0; i < static_cast<std::size_t>(tensor.elementCount()); ++i) {
        const auto step = static_cast<int>(i);
        switch (dtype) {
        case DType::F32:
            tensor.values<float>()[i] = static_cast<float>(step) * -1.25f + 0.5f;
            break;
        case DType::F64:
            tensor.values<double>()[i] = step * 3.0e100 - 1e-300;
            break;
        case DType::I32:
            tensor.values<std::int32_t>()[i] = step * -100000 + 7;
            break;
        case DType::I64:
            tensor.values<std::int64_t>()[i] = std::int64_t{step} * (std::int64_t{1} << 40) - 3;
            break;
        case DType::Bool:
            tensor.bytes()[i] = std::byte(step % 3 == 0 ? 1 : 0);
            break;
        }
    }
    return tensor;
}

std::span<const std::byte> asBytes(const QByteArray& data) {
    return {reinterpret_cast<const std::byte*>(data.constData()),
            static_cast<std::size_t>(data.size())};
}

QByteArray readFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

// Numbers in the manifest are JSON integers or doubles.
double numberOf(const json::value& value) {
    if (value.is_int64())
        return static_cast<double>(value.get_int64());
    if (value.is_uint64())
        return static_cast<double>(value.get_uint64());
    return value.as_double();
}

} // namespace

class TestTensorFrame : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void crc32MatchesZlib();
    void roundTripEveryDtype();
    void prefixIsAligned();
    void decodesSharedVectors();
    void rejectsBoolOutsideZeroOne();
    void rejectsCorruptElements();
    void enforcesTensorLimit();
};

void TestTensorFrame::crc32MatchesZlib() {
    const std::string text = "123456789";
    QCOMPARE(goblin::core::crc32(std::as_bytes(std::span(text))), std::uint32_t{0xCBF43926});
    QCOMPARE(goblin::core::crc32({}), std::uint32_t{0});
}

void TestTensorFrame::roundTripEveryDtype() {
    for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
        for (const Shape& shape : {Shape{}, Shape{0}, Shape{7}, Shape{2, 3}, Shape{3, 0, 2},
                                   Shape{1, 2, 1, 2, 1, 2, 1, 2}}) {
            const Tensor tensor = patternTensor(dtype, shape);
            const std::vector<std::byte> frame = encodeTensorFrame(tensor);
            auto decoded = decodeTensorFrame(frame, FrameLimits{kOneGiB});
            QVERIFY2(decoded.has_value(), decoded ? "" : decoded.error().describe().c_str());
            QCOMPARE(decoded->dtype(), dtype);
            QCOMPARE(decoded->shape(), shape);
            QCOMPARE(decoded->byteSize(), tensor.byteSize());
            QVERIFY(std::equal(decoded->bytes().begin(), decoded->bytes().end(),
                               tensor.bytes().begin(), tensor.bytes().end()));
        }
    }
}

void TestTensorFrame::prefixIsAligned() {
    for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
        for (const Shape& shape : {Shape{}, Shape{5}, Shape{123456, 0}, Shape(8, 3)}) {
            const Tensor tensor = patternTensor(dtype, shape);
            const std::vector<std::byte> prefix = encodeTensorFramePrefix(tensor);
            QCOMPARE(prefix.size() % goblin::core::kFrameAlignment, std::size_t{0});
            std::uint64_t headerLength = 0;
            std::memcpy(&headerLength, prefix.data(), 8); // the test host is little-endian
            QVERIFY(headerLength >= 1 && headerLength <= goblin::core::kMaxFrameHeaderBytes);
            QVERIFY(8 + headerLength <= prefix.size());
            QVERIFY(prefix.size() < 8 + headerLength + goblin::core::kFrameAlignment);
            for (std::size_t i = 8 + headerLength; i < prefix.size(); ++i)
                QCOMPARE(prefix[i], std::byte{0});
            QCOMPARE(encodeTensorFrame(tensor).size(), prefix.size() + tensor.byteSize());
        }
    }
}

void TestTensorFrame::decodesSharedVectors() {
    const QString folder = QStringLiteral(GOBLIN_SOURCE_DIR "/tests/vectors/");
    const QByteArray manifestText = readFile(folder + "manifest.json");
    if (manifestText.isEmpty())
        QFAIL("tests/vectors/manifest.json is missing or empty");
    json::error_code ec;
    const json::value manifest =
        json::parse(std::string_view(manifestText.constData(), manifestText.size()), ec);
    QVERIFY2(!ec && manifest.is_object(), "manifest.json is not a JSON object");
    const json::array& vectors = manifest.at("vectors").as_array();
    if (vectors.size() < 10)
        QFAIL("manifest.json lists fewer than 10 vectors");
    int checked = 0;
    for (const json::value& entry : vectors) {
        const json::object& vector = entry.as_object();
        const std::string file(vector.at("file").as_string());
        const QString path = folder + QString::fromStdString(file);
        QVERIFY2(QFile::exists(path), (file + " is missing").c_str());
        const QByteArray frame = readFile(path);
        auto decoded = decodeTensorFrame(asBytes(frame), FrameLimits{kOneGiB});
        const std::string context = file + ": ";
        if (vector.at("expect").as_string() == "error") {
            const std::string expected(vector.at("code").as_string());
            QVERIFY2(!decoded.has_value(), (context + "decoded, expected " + expected).c_str());
            QCOMPARE(std::string(goblin::wireName(decoded.error().code)), expected);
            ++checked;
            continue;
        }
        QVERIFY2(decoded.has_value(),
                 (context + (decoded ? "" : decoded.error().describe())).c_str());
        QCOMPARE(std::string(wireName(decoded->dtype())),
                 std::string(vector.at("dtype").as_string()));
        Shape shape;
        for (const json::value& dim : vector.at("shape").as_array())
            shape.push_back(dim.as_int64());
        QVERIFY2(decoded->shape() == shape, (context + "shape differs").c_str());
        const json::array& values = vector.at("values").as_array();
        QCOMPARE(static_cast<std::size_t>(decoded->elementCount()), values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            QVERIFY2(elementAt(*decoded, i) == numberOf(values[i]),
                     (context + "value " + std::to_string(i) + " differs").c_str());
        }
        ++checked;
    }
    QCOMPARE(static_cast<std::size_t>(checked), vectors.size());
}

void TestTensorFrame::rejectsBoolOutsideZeroOne() {
    Tensor tensor = patternTensor(DType::Bool, {4});
    tensor.bytes()[2] = std::byte{2};
    // The encoder does not judge values: the decoder must (bool is 0 or 1 on the wire).
    auto decoded = decodeTensorFrame(encodeTensorFrame(tensor), FrameLimits{kOneGiB});
    QVERIFY(!decoded.has_value());
    QCOMPARE(decoded.error().code, ErrorCode::InvalidFrame);
}

void TestTensorFrame::rejectsCorruptElements() {
    const Tensor tensor = patternTensor(DType::F32, {4, 4});
    std::vector<std::byte> frame = encodeTensorFrame(tensor);
    frame.back() ^= std::byte{0x01};
    auto decoded = decodeTensorFrame(frame, FrameLimits{kOneGiB});
    QVERIFY(!decoded.has_value());
    QCOMPARE(decoded.error().code, ErrorCode::InvalidFrame);
    frame.pop_back();
    QCOMPARE(decodeTensorFrame(frame, FrameLimits{kOneGiB}).error().code, ErrorCode::InvalidFrame);
}

void TestTensorFrame::enforcesTensorLimit() {
    const Tensor tensor = patternTensor(DType::F64, {4, 4}); // 128 bytes
    const std::vector<std::byte> frame = encodeTensorFrame(tensor);
    QVERIFY(decodeTensorFrame(frame, FrameLimits{128}).has_value());
    auto decoded = decodeTensorFrame(frame, FrameLimits{127});
    QVERIFY(!decoded.has_value());
    QCOMPARE(decoded.error().code, ErrorCode::LimitExceeded);
}

QTEST_APPLESS_MAIN(TestTensorFrame)
#include "test_tensor_frame.moc"
