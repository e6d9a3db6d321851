// Tests of the typed handshake messages: exact wire form, round trip, and refusal of every
// malformed field (the close codes depend on the error codes, so those are checked too).
#include <QtTest/QtTest>

#include "goblin/net/messages/handshake.hpp"
#include "message_checks.hpp"

using namespace goblin;
using namespace goblin::net;
using namespace goblin::net::testing;
namespace json = boost::json;

namespace {

VolunteerHello sampleVolunteerHello() {
    VolunteerHello hello;
    hello.identity = VolunteerIdentity{"v-1234", "s3cret"};
    hello.capabilities.backend = "opencl-clblast";
    hello.capabilities.threads = 2;
    hello.capabilities.memoryBytes = 4294967296;
    hello.capabilities.dtypes = {"f32", "f64"};
    hello.capabilities.ops = {"matmul", "graph"};
    hello.capabilities.slots = 2;
    hello.capabilities.devices = json::array{json::object{{"id", "cpu"}, {"backend", "cpu-eigen"}}};
    return hello;
}

} // namespace

class TestHandshake : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void researcherHelloWireForm();
    void researcherHelloFields();
    void volunteerHelloRoundTrip();
    void volunteerHelloFields();
    void volunteerIdentityErrors();
    void capabilitiesFields();
    void capabilitiesRanges();
    void helloVersions();
    void welcomeRoundTrip();
    void welcomeFields();
    void errorReplyRoundTrip();
    void errorReplyFields();
};

void TestHandshake::researcherHelloWireForm() {
    const Message message = toMessage(ResearcherHello{1, 1, 3, "tok"});
    QCOMPARE(wireText(message),
             wireText(R"({"type":"hello","id":1,"protocol":1,"catalog":3,"token":"tok"})"));
    auto parsed = parseResearcherHello(overTheWire(message).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->token, std::string("tok"));
    QCOMPARE(parsed->catalog, std::int64_t{3});
}

void TestHandshake::researcherHelloFields() {
    checkEveryField(toMessage(ResearcherHello{4, 1, 3, "tok"}), onControl(parseResearcherHello),
                    {"id", "token"});
    // The node answers a bad token with 4001, not 1002.
    auto control = toMessage(ResearcherHello{}).control;
    control["token"] = 5;
    auto parsed = parseResearcherHello(control);
    QVERIFY(!parsed);
    QCOMPARE(parsed.error().code, ErrorCode::Unauthenticated);
    control.erase("token");
    parsed = parseResearcherHello(control);
    QVERIFY(parsed);
    QVERIFY(parsed->token.empty());
}

void TestHandshake::volunteerHelloRoundTrip() {
    const Message message = toMessage(sampleVolunteerHello());
    QCOMPARE(wireText(message), wireText(R"({"type":"hello","id":1,"protocol":10,"catalog":3,
                 "identity":{"volunteer":"v-1234","secret":"s3cret"},
                 "capabilities":{"backend":"opencl-clblast","threads":2,"memory_bytes":4294967296,
                   "dtypes":["f32","f64"],"ops":["matmul","graph"],"slots":2,
                   "devices":[{"id":"cpu","backend":"cpu-eigen"}]}})"));
    auto parsed = parseVolunteerHello(overTheWire(message).control);
    QVERIFY(parsed);
    QVERIFY(parsed->identity);
    QCOMPARE(parsed->identity->volunteerId, std::string("v-1234"));
    QCOMPARE(parsed->identity->secret, std::string("s3cret"));
    QCOMPARE(parsed->capabilities.memoryBytes, std::int64_t{4294967296});
    QCOMPARE(parsed->capabilities.slots, std::int64_t{2});
    QVERIFY(parsed->capabilities.runs("graph"));
    QVERIFY(parsed->capabilities.takes("f64"));
    QVERIFY(!parsed->capabilities.takes("i32"));
    QCOMPARE(wireText(toMessage(*parsed)), wireText(message));

    VolunteerHello first = sampleVolunteerHello();
    first.identity.reset();
    auto again = parseVolunteerHello(overTheWire(toMessage(first)).control);
    QVERIFY(again);
    QVERIFY(!again->identity);
    QVERIFY(toMessage(first).control.at("identity").is_null());
}

void TestHandshake::volunteerHelloFields() {
    checkEveryField(toMessage(sampleVolunteerHello()), onControl(parseVolunteerHello),
                    {"id", "identity"});
}

void TestHandshake::volunteerIdentityErrors() {
    auto control = toMessage(sampleVolunteerHello()).control;
    control["identity"] = json::object{{"volunteer", "v-1"}};
    auto parsed = parseVolunteerHello(control);
    QVERIFY(!parsed);
    QCOMPARE(parsed.error().code, ErrorCode::Unauthenticated);
    control["identity"] = "v-1";
    parsed = parseVolunteerHello(control);
    QVERIFY(!parsed);
    QCOMPARE(parsed.error().code, ErrorCode::InvalidMessage);
}

void TestHandshake::capabilitiesFields() {
    const json::object caps =
        toMessage(sampleVolunteerHello()).control.at("capabilities").as_object();
    checkEveryField(Message{caps, {}}, onControl(parseCapabilities), {"threads", "devices"});
}

void TestHandshake::capabilitiesRanges() {
    const json::object caps =
        toMessage(sampleVolunteerHello()).control.at("capabilities").as_object();
    auto refused = [&](const char* key, json::value value) {
        json::object wrong = caps;
        wrong[key] = std::move(value);
        return !parseCapabilities(wrong).has_value();
    };
    QVERIFY(refused("slots", 0));
    QVERIFY(refused("slots", 17));
    QVERIFY(!refused("slots", 16));
    QVERIFY(refused("memory_bytes", -1));
    QVERIFY(refused("threads", -1));
    QVERIFY(refused("backend", ""));
    QVERIFY(refused("backend", json::value(std::string(65, 'b'))));
    QVERIFY(refused("dtypes", json::array{"f32", 3}));
    QVERIFY(refused("ops", json::array(17, json::value("matmul"))));
    QVERIFY(refused("devices", json::array(17, json::object{})));
    json::object many = caps;
    many["dtypes"] = json::array{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    auto capped = parseCapabilities(many);
    QVERIFY(capped);
    QCOMPARE(capped->dtypes.size(), std::size_t{8});
}

void TestHandshake::helloVersions() {
    auto control = toMessage(ResearcherHello{}).control;
    auto versions = parseHelloVersions(control);
    QVERIFY(versions);
    QCOMPARE(versions->catalog, std::int64_t{kCatalogVersion});
    control["catalog"] = kMatmulCatalogVersion;
    QVERIFY(parseHelloVersions(control));
    for (json::value bad : {json::value(0), json::value(kCatalogVersion + 1), json::value("3")}) {
        control["catalog"] = bad;
        auto refused = parseHelloVersions(control);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::VersionMismatch);
    }
    control["catalog"] = kCatalogVersion;
    control["protocol"] = kOldestProtocolVersion;
    QCOMPARE(parseHelloVersions(control)->protocol, std::int64_t{kOldestProtocolVersion});
    control["protocol"] = kProtocolVersion + 1;
    QVERIFY(!parseHelloVersions(control));
    control["protocol"] = kOldestProtocolVersion - 1;
    QVERIFY(!parseHelloVersions(control));
    control.erase("protocol");
    auto missing = parseHelloVersions(control);
    QVERIFY(!missing);
    QCOMPARE(missing.error().code, ErrorCode::VersionMismatch);
}

void TestHandshake::welcomeRoundTrip() {
    Welcome welcome;
    welcome.volunteerId = "v-9";
    welcome.secret = "new-secret";
    welcome.limits.maxTiles = 12;
    const Message message = toMessage(welcome);
    QCOMPARE(wireText(message), wireText(R"({"type":"welcome","id":1,"protocol":10,"catalog":3,
                 "limits":{"max_control_bytes":65536,"max_authenticated_control_bytes":4194304,
                   "max_tensors_per_message":64,"max_tensor_bytes":1073741824,"max_tiles":12},
                 "secret":"new-secret","volunteer":"v-9"})"));
    auto parsed = parseWelcome(overTheWire(message).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->volunteerId.value_or(""), std::string("v-9"));
    QCOMPARE(parsed->secret.value_or(""), std::string("new-secret"));
    QCOMPARE(parsed->limits.maxTiles, std::int64_t{12});
    QCOMPARE(parsed->limits.maxAuthenticatedControlBytes, std::size_t{4194304});

    auto researcher = parseWelcome(overTheWire(toMessage(Welcome{})).control);
    QVERIFY(researcher);
    QVERIFY(!researcher->volunteerId);
    QVERIFY(!researcher->secret);
}

void TestHandshake::welcomeFields() {
    Welcome welcome;
    welcome.volunteerId.emplace("v-9");
    welcome.secret.emplace("secret-9");
    checkEveryField(toMessage(welcome), onControl(parseWelcome), {"id", "volunteer", "secret"});
    auto control = toMessage(welcome).control;
    for (const char* key : {"max_control_bytes", "max_authenticated_control_bytes",
                            "max_tensors_per_message", "max_tensor_bytes", "max_tiles"}) {
        auto wrong = control;
        wrong["limits"].as_object().erase(key);
        auto parsed = parseWelcome(wrong);
        QVERIFY2(!parsed, key);
        QVERIFY(parsed.error().message.find(key) != std::string::npos);
        wrong["limits"].as_object()[key] = -1;
        QVERIFY2(!parseWelcome(wrong), key);
    }
    control["volunteer"] = "";
    QVERIFY(!parseWelcome(control));
}

void TestHandshake::errorReplyRoundTrip() {
    const Message message =
        toMessage(ErrorReply{2, Error{ErrorCode::ShapeMismatch, "inner sizes differ"}});
    QCOMPARE(
        wireText(message),
        wireText(
            R"({"type":"error","id":2,"code":"shape_mismatch","message":"inner sizes differ"})"));
    auto parsed = parseErrorReply(overTheWire(message).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->id, std::int64_t{2});
    QCOMPARE(parsed->error.code, ErrorCode::ShapeMismatch);
    QCOMPARE(parsed->error.message, std::string("inner sizes differ"));
}

void TestHandshake::errorReplyFields() {
    const Message valid = toMessage(ErrorReply{2, Error{ErrorCode::NotFound, "no job j-1"}});
    checkEveryField(valid, onControl(parseErrorReply), {"id"});
    auto control = valid.control;
    control["code"] = "no_such_code";
    auto parsed = parseErrorReply(control);
    QVERIFY(!parsed);
    QVERIFY(parsed.error().message.find("code") != std::string::npos);
}

QTEST_APPLESS_MAIN(TestHandshake)
#include "test_handshake.moc"
