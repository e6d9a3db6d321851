// Tests of MessageAssembler, the Sans-I/O layer: frames in, validated messages out.
#include <QtTest/QtTest>

#include <charconv>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "goblin/core/tensor_frame.hpp"
#include "goblin/net/message_assembler.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using goblin::core::Shape;
using goblin::core::Tensor;
using goblin::net::encodeMessage;
using goblin::net::FrameKind;
using goblin::net::Limits;
using goblin::net::Message;
using goblin::net::MessageAssembler;
using goblin::net::OutgoingFrame;

namespace json = boost::json;

namespace {

std::vector<std::byte> textBytes(std::string_view text) {
    std::vector<std::byte> bytes(text.size());
    if (!text.empty())
        std::memcpy(bytes.data(), text.data(), text.size());
    return bytes;
}

// The payload a peer would receive for an encoded frame.
std::vector<std::byte> payloadOf(const OutgoingFrame& frame) {
    if (frame.kind == FrameKind::Text)
        return textBytes(frame.text);
    std::vector<std::byte> bytes = frame.prefix;
    const auto elements = frame.tensor->bytes();
    bytes.insert(bytes.end(), elements.begin(), elements.end());
    return bytes;
}

// A tensor of random non-zero values.
Tensor randomTensor(DType dtype, Shape shape, unsigned seed) {
    Tensor tensor = Tensor::allocate(dtype, std::move(shape)).value();
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(0.5, 100.0);
    const auto count = static_cast<std::size_t>(tensor.elementCount());
    for (std::size_t i = 0; i < count; ++i) {
        const double value = (i % 2 == 0 ? 1.0 : -1.0) * uniform(random);
        switch (dtype) {
        case DType::F32:
            tensor.values<float>()[i] = static_cast<float>(value);
            break;
        case DType::F64:
            tensor.values<double>()[i] = value;
            break;
        case DType::I32:
            tensor.values<std::int32_t>()[i] = static_cast<std::int32_t>(value * 1000);
            break;
        case DType::I64:
            tensor.values<std::int64_t>()[i] = static_cast<std::int64_t>(value * 1e12);
            break;
        case DType::Bool:
            tensor.bytes()[i] = std::byte(i % 3 == 0 ? 1 : 0);
            break;
        }
    }
    return tensor;
}

bool sameBytes(const Tensor& a, const Tensor& b) {
    return a.byteSize() == b.byteSize() &&
           std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

// Feeds a text frame and returns the error code, or nothing when the frame was accepted.
std::optional<ErrorCode> textError(MessageAssembler& assembler, std::string_view text) {
    const auto bytes = textBytes(text);
    auto result = assembler.onFrame(FrameKind::Text, bytes);
    if (result)
        return std::nullopt;
    return result.error().code;
}

} // namespace

class TestMessageAssembler : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void controlOnlyMessage();
    void tensorsRefusedUntilAllowed();
    void messageWithTwoTensors();
    void zeroTensorsIsControlOnly();
    void textFrameWhileTensorsDue();
    void binaryFrameNotAnnounced();
    void rejectsBadControlFrames_data();
    void rejectsBadControlFrames();
    void rejectsBadTensorCounts_data();
    void rejectsBadTensorCounts();
    void acceptsMaximumTensorCount();
    void controlOverLimit();
    void authenticatedControlLimit();
    void doublesKeepTheirBits();
    void tensorOverLimit();
    void truncatedTensorFrame();
    void corruptedTensorFrame();
    void nextFrameLimitSwitches();
    void reusableAfterMessages();
};

void TestMessageAssembler::controlOnlyMessage() {
    MessageAssembler assembler{Limits{}};
    const auto bytes = textBytes(R"({"type":"hello","id":1,"protocol":1})");
    auto result = assembler.onFrame(FrameKind::Text, bytes);
    QVERIFY(result.has_value());
    QVERIFY(result->has_value());
    const Message& message = **result;
    QCOMPARE(message.type(), std::string_view("hello"));
    QCOMPARE(message.control.at("id").as_int64(), std::int64_t{1});
    QCOMPARE(message.control.at("protocol").as_int64(), std::int64_t{1});
    QVERIFY(message.tensors.empty());
}

void TestMessageAssembler::tensorsRefusedUntilAllowed() {
    MessageAssembler assembler{Limits{}};
    assembler.setTensorsAllowed(false);
    const auto announce = textBytes(R"({"type":"submit_matmul","id":2,"tensors":2})");
    auto refused = assembler.onFrame(FrameKind::Text, announce);
    QVERIFY(!refused.has_value());
    QCOMPARE(refused.error().code, goblin::ErrorCode::InvalidMessage);
    // Control messages still pass, and once allowed, tensors are announced as usual.
    auto hello = assembler.onFrame(FrameKind::Text, textBytes(R"({"type":"hello","id":1})"));
    QVERIFY(hello.has_value() && hello->has_value());
    assembler.setTensorsAllowed(true);
    auto announced = assembler.onFrame(FrameKind::Text, announce);
    QVERIFY(announced.has_value());
    QVERIFY(!announced->has_value());
    QVERIFY(assembler.nextFrameLimit() > Limits{}.maxControlBytes);
}

void TestMessageAssembler::messageWithTwoTensors() {
    const Tensor a = randomTensor(DType::F32, {3, 5}, 1);
    const Tensor b = randomTensor(DType::I64, {5, 2, 2}, 2);
    Message outgoing{json::object{{"type", "submit_matmul"}, {"id", 2}},
                     {std::make_shared<const Tensor>(a), std::make_shared<const Tensor>(b)}};
    const auto frames = encodeMessage(outgoing);
    QCOMPARE(frames.size(), std::size_t{3});
    QCOMPARE(frames[0].kind, FrameKind::Text);
    QCOMPARE(frames[1].kind, FrameKind::Binary);
    QCOMPARE(frames[2].kind, FrameKind::Binary);

    MessageAssembler assembler{Limits{}};
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
        auto partial = assembler.onFrame(frames[i].kind, payloadOf(frames[i]));
        QVERIFY(partial.has_value());
        QVERIFY2(!partial->has_value(), "a message came out before its last tensor");
    }
    auto result = assembler.onFrame(frames[2].kind, payloadOf(frames[2]));
    QVERIFY2(result.has_value(), result ? "" : result.error().message.c_str());
    QVERIFY(result->has_value());
    const Message& message = **result;
    QCOMPARE(message.type(), std::string_view("submit_matmul"));
    QCOMPARE(message.control.at("id").as_int64(), std::int64_t{2});
    QCOMPARE(message.control.at("tensors").to_number<std::int64_t>(), std::int64_t{2});
    QCOMPARE(message.tensors.size(), std::size_t{2});
    QCOMPARE(message.tensors[0]->dtype(), DType::F32);
    QCOMPARE(message.tensors[0]->shape(), (Shape{3, 5}));
    QVERIFY(sameBytes(*message.tensors[0], a));
    QCOMPARE(message.tensors[1]->dtype(), DType::I64);
    QCOMPARE(message.tensors[1]->shape(), (Shape{5, 2, 2}));
    QVERIFY(sameBytes(*message.tensors[1], b));
}

void TestMessageAssembler::zeroTensorsIsControlOnly() {
    MessageAssembler assembler{Limits{}};
    auto result = assembler.onFrame(FrameKind::Text, textBytes(R"({"type":"x","tensors":0})"));
    QVERIFY(result.has_value());
    QVERIFY(result->has_value());
    QVERIFY((*result)->tensors.empty());
    QCOMPARE(assembler.nextFrameLimit(), Limits{}.maxControlBytes);
}

void TestMessageAssembler::textFrameWhileTensorsDue() {
    MessageAssembler assembler{Limits{}};
    QCOMPARE(textError(assembler, R"({"type":"result","tensors":1})"), std::optional<ErrorCode>());
    QCOMPARE(textError(assembler, R"({"type":"hello"})"),
             std::optional<ErrorCode>(ErrorCode::InvalidMessage));
}

void TestMessageAssembler::binaryFrameNotAnnounced() {
    MessageAssembler assembler{Limits{}};
    const auto frame = goblin::core::encodeTensorFrame(randomTensor(DType::F64, {2, 2}, 3));
    auto result = assembler.onFrame(FrameKind::Binary, frame);
    QVERIFY(!result.has_value());
    QCOMPARE(result.error().code, ErrorCode::InvalidFrame);

    // Also after a complete control-only message.
    MessageAssembler second{Limits{}};
    QCOMPARE(textError(second, R"({"type":"ping"})"), std::optional<ErrorCode>());
    auto late = second.onFrame(FrameKind::Binary, frame);
    QVERIFY(!late.has_value());
    QCOMPARE(late.error().code, ErrorCode::InvalidFrame);
}

void TestMessageAssembler::rejectsBadControlFrames_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("not json") << QByteArray("{\"type\": \"hello\"");
    QTest::newRow("garbage") << QByteArray("hello world");
    QTest::newRow("empty") << QByteArray("");
    QTest::newRow("trailing garbage") << QByteArray("{\"type\":\"a\"} x");
    QTest::newRow("array") << QByteArray("[{\"type\":\"hello\"}]");
    QTest::newRow("number") << QByteArray("42");
    QTest::newRow("string") << QByteArray("\"hello\"");
    QTest::newRow("null") << QByteArray("null");
    QTest::newRow("missing type") << QByteArray("{\"id\":1}");
    QTest::newRow("empty object") << QByteArray("{}");
    QTest::newRow("type not string") << QByteArray("{\"type\":5}");
    QTest::newRow("type null") << QByteArray("{\"type\":null}");
    QTest::newRow("type empty") << QByteArray("{\"type\":\"\"}");
    QTest::newRow("type object") << QByteArray("{\"type\":{\"a\":1}}");
}

void TestMessageAssembler::rejectsBadControlFrames() {
    QFETCH(QByteArray, text);
    MessageAssembler assembler{Limits{}};
    QCOMPARE(textError(assembler, std::string_view(text.constData(), text.size())),
             std::optional<ErrorCode>(ErrorCode::InvalidMessage));
}

void TestMessageAssembler::rejectsBadTensorCounts_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("negative") << QByteArray("{\"type\":\"a\",\"tensors\":-1}");
    QTest::newRow("fraction") << QByteArray("{\"type\":\"a\",\"tensors\":1.5}");
    QTest::newRow("integral double") << QByteArray("{\"type\":\"a\",\"tensors\":2.0}");
    QTest::newRow("string") << QByteArray("{\"type\":\"a\",\"tensors\":\"2\"}");
    QTest::newRow("bool") << QByteArray("{\"type\":\"a\",\"tensors\":true}");
    QTest::newRow("null") << QByteArray("{\"type\":\"a\",\"tensors\":null}");
    QTest::newRow("sixty-five") << QByteArray("{\"type\":\"a\",\"tensors\":65}");
    QTest::newRow("huge") << QByteArray("{\"type\":\"a\",\"tensors\":9223372036854775807}");
    QTest::newRow("uint64") << QByteArray("{\"type\":\"a\",\"tensors\":18446744073709551615}");
}

void TestMessageAssembler::rejectsBadTensorCounts() {
    QFETCH(QByteArray, text);
    MessageAssembler assembler{Limits{}};
    QCOMPARE(textError(assembler, std::string_view(text.constData(), text.size())),
             std::optional<ErrorCode>(ErrorCode::InvalidMessage));
    // Nothing was announced, so the assembler still expects a control frame.
    QCOMPARE(assembler.nextFrameLimit(), Limits{}.maxControlBytes);
}

void TestMessageAssembler::acceptsMaximumTensorCount() {
    MessageAssembler assembler{Limits{}};
    QCOMPARE(textError(assembler, R"({"type":"a","tensors":8})"), std::optional<ErrorCode>());
    const Tensor tensor = randomTensor(DType::I32, {4}, 4);
    const auto frame = goblin::core::encodeTensorFrame(tensor);
    for (int i = 0; i < 7; ++i) {
        auto partial = assembler.onFrame(FrameKind::Binary, frame);
        QVERIFY(partial.has_value());
        QVERIFY(!partial->has_value());
    }
    auto result = assembler.onFrame(FrameKind::Binary, frame);
    QVERIFY(result.has_value());
    QVERIFY(result->has_value());
    QCOMPARE((*result)->tensors.size(), std::size_t{8});
    for (const auto& received : (*result)->tensors)
        QVERIFY(sameBytes(*received, tensor));
}

void TestMessageAssembler::controlOverLimit() {
    Limits limits;
    limits.maxControlBytes = 64;
    MessageAssembler assembler{limits};
    // Exactly at the limit is fine.
    std::string text = R"({"type":"a","pad":")";
    text += std::string(64 - text.size() - 2, 'x') + "\"}";
    QCOMPARE(text.size(), std::size_t{64});
    QCOMPARE(textError(assembler, text), std::optional<ErrorCode>());
    // One byte over is not, even though it is valid JSON.
    std::string over = R"({"type":"a","pad":")";
    over += std::string(65 - over.size() - 2, 'x') + "\"}";
    QCOMPARE(over.size(), std::size_t{65});
    QCOMPARE(textError(assembler, over), std::optional<ErrorCode>(ErrorCode::LimitExceeded));
}

void TestMessageAssembler::authenticatedControlLimit() {
    Limits limits;
    limits.maxControlBytes = 64;
    limits.maxAuthenticatedControlBytes = 200;
    MessageAssembler assembler{limits};
    assembler.setTensorsAllowed(false);
    std::string text = R"({"type":"a","pad":")";
    text += std::string(150, 'x') + "\"}";
    QCOMPARE(textError(assembler, text), std::optional<ErrorCode>(ErrorCode::LimitExceeded));
    assembler.setTensorsAllowed(true);
    assembler.raiseControlLimit();
    QCOMPARE(assembler.nextFrameLimit(), std::size_t{200});
    QCOMPARE(textError(assembler, text), std::optional<ErrorCode>());
    std::string over = R"({"type":"a","pad":")";
    over += std::string(250, 'x') + "\"}";
    QCOMPARE(textError(assembler, over), std::optional<ErrorCode>(ErrorCode::LimitExceeded));
}

// Boost.JSON 1.81's own parser reads some doubles one ulp off; control messages carry a graph's
// constants and attributes, which must arrive bit for bit (and survive re-serialising).
void TestMessageAssembler::doublesKeepTheirBits() {
    const std::vector<double> values{
        -1.1677287743379883, 0.1, 1e-300, 2.2250738585072014e-308, 0.30000000000000004,
        123456.78901234567};
    std::string text = R"({"type":"a","values":[)";
    for (std::size_t i = 0; i < values.size(); ++i) {
        char buffer[64];
        const auto written = std::to_chars(buffer, buffer + sizeof buffer, values[i]);
        if (i > 0)
            text += ',';
        text.append(buffer, written.ptr);
    }
    text += "]}";
    MessageAssembler assembler{Limits{}};
    auto result = assembler.onFrame(FrameKind::Text, textBytes(text));
    QVERIFY(result.has_value() && result->has_value());
    const auto& parsed = (*result)->control.at("values").as_array();
    boost::system::error_code ec;
    const auto again = goblin::core::parsePrecise(boost::json::serialize(parsed), ec).as_array();
    for (std::size_t i = 0; i < values.size(); ++i) {
        QCOMPARE(parsed[i].as_double(), values[i]);
        QCOMPARE(again[i].as_double(), values[i]);
    }
}

void TestMessageAssembler::tensorOverLimit() {
    Limits limits;
    limits.maxTensorBytes = 64;
    {
        MessageAssembler assembler{limits};
        QCOMPARE(textError(assembler, R"({"type":"a","tensors":1})"), std::optional<ErrorCode>());
        // 16 floats = 64 bytes: at the limit.
        auto result = assembler.onFrame(
            FrameKind::Binary, goblin::core::encodeTensorFrame(randomTensor(DType::F32, {16}, 5)));
        QVERIFY2(result.has_value(), result ? "" : result.error().message.c_str());
        QVERIFY(result->has_value());
    }
    MessageAssembler assembler{limits};
    QCOMPARE(textError(assembler, R"({"type":"a","tensors":1})"), std::optional<ErrorCode>());
    // 17 floats = 68 bytes: over.
    auto result = assembler.onFrame(
        FrameKind::Binary, goblin::core::encodeTensorFrame(randomTensor(DType::F32, {17}, 6)));
    QVERIFY(!result.has_value());
    QCOMPARE(result.error().code, ErrorCode::LimitExceeded);
}

void TestMessageAssembler::truncatedTensorFrame() {
    MessageAssembler assembler{Limits{}};
    QCOMPARE(textError(assembler, R"({"type":"a","tensors":1})"), std::optional<ErrorCode>());
    auto frame = goblin::core::encodeTensorFrame(randomTensor(DType::F64, {3, 3}, 7));
    frame.pop_back();
    auto result = assembler.onFrame(FrameKind::Binary, frame);
    QVERIFY(!result.has_value());
    QCOMPARE(result.error().code, ErrorCode::InvalidFrame);

    MessageAssembler headerOnly{Limits{}};
    QCOMPARE(textError(headerOnly, R"({"type":"a","tensors":1})"), std::optional<ErrorCode>());
    frame.resize(5);
    auto tooShort = headerOnly.onFrame(FrameKind::Binary, frame);
    QVERIFY(!tooShort.has_value());
    QCOMPARE(tooShort.error().code, ErrorCode::InvalidFrame);
}

void TestMessageAssembler::corruptedTensorFrame() {
    MessageAssembler assembler{Limits{}};
    QCOMPARE(textError(assembler, R"({"type":"a","tensors":1})"), std::optional<ErrorCode>());
    auto frame = goblin::core::encodeTensorFrame(randomTensor(DType::F64, {3, 3}, 8));
    frame.back() ^= std::byte{0x01}; // the checksum no longer matches
    auto result = assembler.onFrame(FrameKind::Binary, frame);
    QVERIFY(!result.has_value());
    QCOMPARE(result.error().code, ErrorCode::InvalidFrame);
}

void TestMessageAssembler::nextFrameLimitSwitches() {
    Limits limits;
    limits.maxControlBytes = 1000;
    limits.maxTensorBytes = 100000;
    MessageAssembler assembler{limits};
    QCOMPARE(assembler.nextFrameLimit(), std::size_t{1000});
    QCOMPARE(textError(assembler, R"({"type":"a","tensors":2})"), std::optional<ErrorCode>());
    const std::size_t tensorLimit = assembler.nextFrameLimit();
    // Room for the elements plus the largest header and its padding.
    QVERIFY(tensorLimit >= limits.maxTensorBytes + 8 + goblin::core::kMaxFrameHeaderBytes);
    QVERIFY(tensorLimit <= limits.maxTensorBytes + 8 + goblin::core::kMaxFrameHeaderBytes +
                               2 * goblin::core::kFrameAlignment);
    const auto frame = goblin::core::encodeTensorFrame(randomTensor(DType::F32, {10}, 9));
    QVERIFY(assembler.onFrame(FrameKind::Binary, frame).has_value());
    QCOMPARE(assembler.nextFrameLimit(), tensorLimit); // one tensor still due
    auto result = assembler.onFrame(FrameKind::Binary, frame);
    QVERIFY(result.has_value() && result->has_value());
    QCOMPARE(assembler.nextFrameLimit(), std::size_t{1000});
}

void TestMessageAssembler::reusableAfterMessages() {
    MessageAssembler assembler{Limits{}};
    for (int round = 0; round < 3; ++round) {
        const Tensor tensor = randomTensor(DType::F64, {2, 3}, 10 + static_cast<unsigned>(round));
        Message outgoing{json::object{{"type", "result"}, {"task", round}},
                         {std::make_shared<const Tensor>(tensor)}};
        std::optional<Message> received;
        for (const auto& frame : encodeMessage(outgoing)) {
            auto result = assembler.onFrame(frame.kind, payloadOf(frame));
            QVERIFY2(result.has_value(), result ? "" : result.error().message.c_str());
            if (result->has_value())
                received = std::move(**result);
        }
        QVERIFY(received.has_value());
        QCOMPARE(received->control.at("task").as_int64(), std::int64_t{round});
        QCOMPARE(received->tensors.size(), std::size_t{1});
        QVERIFY(sameBytes(*received->tensors[0], tensor));

        auto control = assembler.onFrame(FrameKind::Text, textBytes(R"({"type":"ping"})"));
        QVERIFY(control.has_value() && control->has_value());
        QCOMPARE((*control)->type(), std::string_view("ping"));
        QVERIFY((*control)->tensors.empty());
    }
}

QTEST_APPLESS_MAIN(TestMessageAssembler)
#include "test_message_assembler.moc"
