// Tests of the typed, validating JSON field reads used on hostile control messages.
#include <QtTest/QtTest>

#include <cstdint>
#include <limits>
#include <string>

#include <boost/json.hpp>

#include "goblin/net/json_fields.hpp"

using goblin::ErrorCode;
using goblin::net::requestId;
using goblin::net::requireInt;
using goblin::net::requireIntIn;
using goblin::net::requireNumber;
using goblin::net::requireString;

namespace json = boost::json;

namespace {

json::object parseObject(std::string_view text) {
    return json::parse(text).as_object();
}

} // namespace

class TestJsonFields : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void requireStringReads();
    void requireStringRejects();
    void requireIntReads();
    void requireIntRejects();
    void requireNumberReads();
    void requireNumberRejects();
    void requireIntInChecksRange();
    void requestIdDefaultsToZero();
};

void TestJsonFields::requireStringReads() {
    const auto object = parseObject(R"({"name":"v-42","empty":""})");
    QCOMPARE(requireString(object, "name").value(), std::string("v-42"));
    QCOMPARE(requireString(object, "empty").value(), std::string());
}

void TestJsonFields::requireStringRejects() {
    const auto object = parseObject(R"({"n":5,"o":{},"a":["x"],"z":null})");
    for (const char* key : {"missing", "n", "o", "a", "z"}) {
        auto value = requireString(object, key);
        QVERIFY2(!value.has_value(), key);
        QCOMPARE(value.error().code, ErrorCode::InvalidMessage);
        QVERIFY2(value.error().message.find(key) != std::string::npos, "the error names the field");
    }
}

void TestJsonFields::requireIntReads() {
    const auto object =
        parseObject(R"({"a":7,"b":-3,"c":9223372036854775807,"d":-9223372036854775808,"e":0})");
    QCOMPARE(requireInt(object, "a").value(), std::int64_t{7});
    QCOMPARE(requireInt(object, "b").value(), std::int64_t{-3});
    QCOMPARE(requireInt(object, "c").value(), std::numeric_limits<std::int64_t>::max());
    QCOMPARE(requireInt(object, "d").value(), std::numeric_limits<std::int64_t>::min());
    QCOMPARE(requireInt(object, "e").value(), std::int64_t{0});
    // A uint64 that fits in int64 is still an integer.
    json::object unsignedValue;
    unsignedValue["u"] = std::uint64_t{12345};
    QCOMPARE(requireInt(unsignedValue, "u").value(), std::int64_t{12345});
}

void TestJsonFields::requireIntRejects() {
    const auto object = parseObject(
        R"({"f":1.5,"g":2.0,"s":"7","b":true,"z":null,"big":18446744073709551615,"o":{}})");
    for (const char* key : {"missing", "f", "g", "s", "b", "z", "big", "o"}) {
        auto value = requireInt(object, key);
        QVERIFY2(!value.has_value(), key);
        QCOMPARE(value.error().code, ErrorCode::InvalidMessage);
        QVERIFY(value.error().message.find(key) != std::string::npos);
    }
}

void TestJsonFields::requireNumberReads() {
    const auto object = parseObject(R"({"d":0.125,"i":-4,"u":18446744073709551615,"e":1e300})");
    QCOMPARE(requireNumber(object, "d").value(), 0.125);
    QCOMPARE(requireNumber(object, "i").value(), -4.0);
    QCOMPARE(requireNumber(object, "u").value(), 18446744073709551615.0);
    QCOMPARE(requireNumber(object, "e").value(), 1e300);
}

void TestJsonFields::requireNumberRejects() {
    const auto object = parseObject(R"({"s":"1.0","b":false,"z":null,"a":[1]})");
    for (const char* key : {"missing", "s", "b", "z", "a"}) {
        auto value = requireNumber(object, key);
        QVERIFY2(!value.has_value(), key);
        QCOMPARE(value.error().code, ErrorCode::InvalidMessage);
    }
}

void TestJsonFields::requireIntInChecksRange() {
    const auto object = parseObject(R"({"lo":1,"hi":16,"under":0,"over":17,"neg":-1,"f":3.5})");
    QCOMPARE(requireIntIn(object, "lo", 1, 16).value(), std::int64_t{1});
    QCOMPARE(requireIntIn(object, "hi", 1, 16).value(), std::int64_t{16});
    for (const char* key : {"under", "over", "neg", "f", "missing"}) {
        auto value = requireIntIn(object, key, 1, 16);
        QVERIFY2(!value.has_value(), key);
        QCOMPARE(value.error().code, ErrorCode::InvalidMessage);
        QVERIFY(value.error().message.find(key) != std::string::npos);
    }
}

void TestJsonFields::requestIdDefaultsToZero() {
    QCOMPARE(requestId(parseObject(R"({"id":42})")), std::int64_t{42});
    QCOMPARE(requestId(parseObject(R"({"id":-7})")), std::int64_t{-7});
    QCOMPARE(requestId(parseObject(R"({"type":"x"})")), std::int64_t{0});
    QCOMPARE(requestId(parseObject(R"({"id":"42"})")), std::int64_t{0});
    QCOMPARE(requestId(parseObject(R"({"id":4.2})")), std::int64_t{0});
    QCOMPARE(requestId(parseObject(R"({"id":null})")), std::int64_t{0});
}

QTEST_APPLESS_MAIN(TestJsonFields)
#include "test_json_fields.moc"
