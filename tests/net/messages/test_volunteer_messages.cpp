// Tests of the typed volunteer messages: exact wire form (matmul and graph variants), round trip,
// and refusal of every malformed field.
#include <QtTest/QtTest>

#include "goblin/net/content_digest.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "message_checks.hpp"

using namespace goblin;
using namespace goblin::net;
using namespace goblin::net::testing;
namespace json = boost::json;

namespace {

MatmulTask sampleMatmulTask() {
    return MatmulTask{{41, 1},
                      core::DType::F32,
                      smallTensor(core::DType::F32, {2, 3}),
                      smallTensor(core::DType::F32, {3, 2})};
}

GraphTask sampleGraphTask() {
    return GraphTask{
        {7, 2}, json::object{{"catalog", 3}}, {smallTensor(core::DType::I64, {3})}, {}, {}};
}

TaskResult sampleResult(TaskOp op) {
    return TaskResult{op, {41, 1}, "cpu-eigen", 0.25, {smallTensor(core::DType::F32, {2, 2})}};
}

} // namespace

class TestVolunteerMessages : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void messageTypeNames();
    void matmulTaskWireForm();
    void matmulTaskFields();
    void graphTaskWireForm();
    void graphTaskFields();
    void graphTaskInputRefs();
    void graphTaskGemmNodes();
    void graphTaskOmitWitnesses();
    void forgetInputs();
    void taskOps();
    void resultWireForms();
    void resultFields();
    void taskErrorWireForms();
    void taskErrorFields();
    void verdictRoundTrip();
    void verdictFields();
};

void TestVolunteerMessages::messageTypeNames() {
    for (std::size_t i = 0; i < kMessageTypeCount; ++i) {
        const auto type = static_cast<MessageType>(i);
        QVERIFY(!wireName(type).empty());
        QCOMPARE(messageTypeFromWire(wireName(type)), std::optional(type));
    }
    QCOMPARE(wireName(MessageType::TaskError), std::string_view("task_error"));
    QVERIFY(!messageTypeFromWire("echo"));
    QVERIFY(wireName(MessageType::Count).empty());
}

void TestVolunteerMessages::matmulTaskWireForm() {
    const MatmulTask task = sampleMatmulTask();
    const Message message = toMessage(task);
    QCOMPARE(wireText(message), wireText(R"({"type":"task","task":41,"attempt":1,"op":"matmul",
                                             "dtype":"f32","tensors":2})"));
    auto parsed = parseMatmulTask(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->ref, (TaskRef{41, 1}));
    QCOMPARE(parsed->a, task.a);
    QCOMPARE(parsed->b, task.b);
}

void TestVolunteerMessages::matmulTaskFields() {
    const Message valid = toMessage(sampleMatmulTask());
    checkEveryField(valid, parseMatmulTask, {"tensors"});
    Message otherDtype = valid;
    otherDtype.control["dtype"] = "f64";
    QVERIFY(!parseMatmulTask(otherDtype));
    Message three = valid;
    three.tensors.push_back(three.tensors[0]);
    three.control["tensors"] = 3;
    QVERIFY(!parseMatmulTask(three));
    Message negative = valid;
    negative.control["task"] = -1;
    QVERIFY(!parseMatmulTask(negative));
    QVERIFY(!parseMatmulTask(toMessage(sampleGraphTask())));
}

void TestVolunteerMessages::graphTaskWireForm() {
    const GraphTask task = sampleGraphTask();
    const Message message = toMessage(task);
    QCOMPARE(wireText(message), wireText(R"({"type":"task","op":"graph","task":7,"attempt":2,
                                             "graph":{"catalog":3},"tensors":1})"));
    auto parsed = parseGraphTask(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->ref, (TaskRef{7, 2}));
    QCOMPARE(parsed->graph, task.graph);
    QCOMPARE(parsed->inputs, task.inputs);
}

void TestVolunteerMessages::graphTaskFields() {
    checkEveryField(toMessage(sampleGraphTask()), parseGraphTask, {"tensors"});
    QVERIFY(!parseGraphTask(toMessage(sampleMatmulTask())));
}

void TestVolunteerMessages::graphTaskInputRefs() {
    const auto kept = smallTensor(core::DType::F32, {4});
    const std::string digest = tensorDigest(*kept);
    const std::string other(64, 'a');
    GraphTask task = sampleGraphTask();
    task.inputs = {task.inputs[0], kept};
    task.inputRefs = {std::nullopt, InputRef{digest, true}, InputRef{other, false}};
    const Message message = toMessage(task);
    const json::array refs{nullptr, json::object{{"digest", digest}, {"keep", true}},
                           json::object{{"digest", other}}};
    QCOMPARE(json::serialize(message.control),
             json::serialize(json::object{{"type", "task"},
                                          {"op", "graph"},
                                          {"task", 7},
                                          {"attempt", 2},
                                          {"graph", json::object{{"catalog", 3}}},
                                          {"input_refs", refs},
                                          {"tensors", 2}}));
    auto parsed = parseGraphTask(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->inputs, task.inputs);
    QCOMPARE(parsed->inputRefs, task.inputRefs);

    // The entries whose tensor follows must match the tensors that came.
    Message missing = message;
    missing.tensors.pop_back();
    missing.control["tensors"] = 1;
    QVERIFY(!parseGraphTask(missing));
    for (const json::value& wrong : {json::value(json::object{{"digest", "ABC"}}),
                                     json::value(json::object{{"digest", std::string(64, 'G')}}),
                                     json::value(json::object{{"digest", digest}, {"keep", 1}}),
                                     json::value(3), json::value(json::object{})}) {
        Message bad = message;
        bad.control["input_refs"].as_array()[2] = wrong;
        auto refused = parseGraphTask(bad);
        QVERIFY2(!refused, json::serialize(wrong).c_str());
        QCOMPARE(refused.error().code, ErrorCode::InvalidMessage);
    }
    Message notArray = message;
    notArray.control["input_refs"] = "all";
    QVERIFY(!parseGraphTask(notArray));
    Message tooMany = message;
    tooMany.control["input_refs"] = json::array(kMaxInputRefs + 1, nullptr);
    QVERIFY(!parseGraphTask(tooMany));
}

void TestVolunteerMessages::graphTaskGemmNodes() {
    GraphTask task = sampleGraphTask();
    task.gemmNodes = {4, 9};
    const Message message = toMessage(task);
    QCOMPARE(wireText(message), wireText(R"({"type":"task","op":"graph","task":7,"attempt":2,
                                             "graph":{"catalog":3},"gemm_nodes":[4,9],
                                             "tensors":1})"));
    auto parsed = parseGraphTask(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->gemmNodes, task.gemmNodes);
    // Absent means none.
    auto plain = parseGraphTask(overTheWire(toMessage(sampleGraphTask())));
    QVERIFY(plain && plain->gemmNodes.empty());
    for (const json::value& wrong :
         {json::value("all"), json::value(json::array{-1}), json::value(json::array{1.5}),
          json::value(json::array{"4"}), json::value(json::array{4, 4}),
          json::value(json::array(kMaxGemmNodes + 1, 0))}) {
        Message bad = message;
        bad.control["gemm_nodes"] = wrong;
        auto refused = parseGraphTask(bad);
        QVERIFY2(!refused, json::serialize(wrong).substr(0, 40).c_str());
        QCOMPARE(refused.error().code, ErrorCode::InvalidMessage);
    }
}

void TestVolunteerMessages::graphTaskOmitWitnesses() {
    GraphTask task = sampleGraphTask();
    task.graph["outputs"] = json::array{5, 3, 4};
    task.omitWitnesses = 2;
    const Message message = toMessage(task);
    QCOMPARE(wireText(message), wireText(R"({"type":"task","op":"graph","task":7,"attempt":2,
                                             "graph":{"catalog":3,"outputs":[5,3,4]},
                                             "omit_witnesses":2,"tensors":1})"));
    auto parsed = parseGraphTask(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->omitWitnesses, std::int64_t{2});
    // Absent means every output; at most the graph's output count.
    auto plain = parseGraphTask(overTheWire(toMessage(sampleGraphTask())));
    QVERIFY(plain && plain->omitWitnesses == 0);
    for (const json::value& wrong :
         {json::value(4), json::value(-1), json::value(1.5), json::value("2"), json::value(true)}) {
        Message bad = message;
        bad.control["omit_witnesses"] = wrong;
        auto refused = parseGraphTask(bad);
        QVERIFY2(!refused, json::serialize(wrong).c_str());
        QCOMPARE(refused.error().code, ErrorCode::InvalidMessage);
    }
    Message all = message;
    all.control["omit_witnesses"] = 3;
    QVERIFY(parseGraphTask(all));
}

void TestVolunteerMessages::forgetInputs() {
    const ForgetInputs forget{{std::string(64, '0'), std::string(64, 'f')}};
    const Message message = toMessage(forget);
    const json::array digests{forget.digests[0].c_str(), forget.digests[1].c_str()};
    QCOMPARE(json::serialize(message.control),
             json::serialize(json::object{{"type", "forget_inputs"}, {"digests", digests}}));
    auto parsed = parseForgetInputs(overTheWire(message).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->digests, forget.digests);
    checkEveryField(message, [](const Message& m) { return parseForgetInputs(m.control); }, {});
    for (const json::value& wrong :
         {json::value("x"), json::value(json::array{1}),
          json::value(json::array{std::string(63, 'a')}),
          json::value(json::array(kMaxInputRefs + 1, std::string(64, 'a').c_str()))}) {
        Message bad = message;
        bad.control["digests"] = wrong;
        QVERIFY(!parseForgetInputs(bad.control));
    }
}

void TestVolunteerMessages::taskOps() {
    auto control = toMessage(sampleMatmulTask()).control;
    QCOMPARE(parseTaskOp(control).value(), TaskOp::Matmul);
    control["op"] = "conv3d";
    auto unknown = parseTaskOp(control);
    QVERIFY(!unknown);
    QCOMPARE(unknown.error().code, ErrorCode::VersionMismatch);
    control.erase("op");
    QCOMPARE(parseTaskOp(control).error().code, ErrorCode::InvalidMessage);
    QCOMPARE(parseReplyOp(control).value(), TaskOp::Matmul);
    control["op"] = "graph";
    QCOMPARE(parseReplyOp(control).value(), TaskOp::Graph);
    control["op"] = "matmul"; // replies name graphs only
    QVERIFY(!parseReplyOp(control));
    QCOMPARE(taskOpFromWire(wireName(TaskOp::Graph)), std::optional(TaskOp::Graph));
}

void TestVolunteerMessages::resultWireForms() {
    const Message matmul = toMessage(sampleResult(TaskOp::Matmul));
    QCOMPARE(wireText(matmul), wireText(R"({"type":"result","task":41,"attempt":1,
                                            "backend":"cpu-eigen","compute_seconds":0.25,"tensors":1})"));
    const Message graph = toMessage(sampleResult(TaskOp::Graph));
    QCOMPARE(wireText(graph), wireText(R"({"type":"result","op":"graph","task":41,"attempt":1,
                                           "backend":"cpu-eigen","compute_seconds":0.25,"tensors":1})"));
    auto parsed = parseTaskResult(overTheWire(graph));
    QVERIFY(parsed);
    QCOMPARE(parsed->op, TaskOp::Graph);
    QCOMPARE(parsed->ref, (TaskRef{41, 1}));
    QCOMPARE(parsed->backend, std::string("cpu-eigen"));
    QCOMPARE(parsed->computeSeconds, 0.25);
    QCOMPARE(parsed->outputs.size(), std::size_t{1});
    QCOMPARE(parseTaskResult(overTheWire(matmul))->op, TaskOp::Matmul);
}

void TestVolunteerMessages::resultFields() {
    checkEveryField(toMessage(sampleResult(TaskOp::Matmul)), parseTaskResult, {"tensors"});
    checkEveryField(toMessage(sampleResult(TaskOp::Graph)), parseTaskResult, {"op", "tensors"});
    for (json::value bad :
         {json::value(-1.0), json::value(std::numeric_limits<double>::infinity())}) {
        Message wrong = toMessage(sampleResult(TaskOp::Matmul));
        wrong.control["compute_seconds"] = bad;
        QVERIFY(!parseTaskResult(wrong));
    }
    // A matmul result is one C tile; a graph result may carry any count (the node's gate judges).
    TaskResult two = sampleResult(TaskOp::Matmul);
    two.outputs.push_back(two.outputs[0]);
    QVERIFY(!parseTaskResult(toMessage(two)));
    two.op = TaskOp::Graph;
    QVERIFY(parseTaskResult(toMessage(two)));
    TaskResult none = sampleResult(TaskOp::Graph);
    none.outputs.clear();
    QVERIFY(parseTaskResult(toMessage(none)));
}

void TestVolunteerMessages::taskErrorWireForms() {
    const Error error{ErrorCode::InvalidInput, "division by zero"};
    QCOMPARE(wireText(toMessage(TaskError{TaskOp::Matmul, {41, 1}, error})),
             wireText(R"({"type":"task_error","task":41,"attempt":1,"code":"invalid_input",
                          "message":"division by zero"})"));
    const Message graph = toMessage(TaskError{TaskOp::Graph, {7, 2}, error});
    QCOMPARE(wireText(graph), wireText(R"({"type":"task_error","op":"graph","task":7,"attempt":2,
                          "code":"invalid_input","message":"division by zero"})"));
    auto parsed = parseTaskError(overTheWire(graph).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->op, TaskOp::Graph);
    QCOMPARE(parsed->ref, (TaskRef{7, 2}));
    QCOMPARE(parsed->error.code, ErrorCode::InvalidInput);
    QCOMPARE(parsed->error.message, std::string("division by zero"));
}

void TestVolunteerMessages::taskErrorFields() {
    const Error error{ErrorCode::Internal, "device lost"};
    checkEveryField(toMessage(TaskError{TaskOp::Graph, {7, 2}, error}), onControl(parseTaskError),
                    {"op"});
    auto control = toMessage(TaskError{TaskOp::Matmul, {7, 2}, error}).control;
    control["code"] = "oops";
    QVERIFY(!parseTaskError(control));
}

void TestVolunteerMessages::verdictRoundTrip() {
    for (Verdict verdict : {Verdict::Accepted, Verdict::Rejected, Verdict::Stale}) {
        const Message message = toMessage(TaskVerdict{{41, 1}, verdict});
        QCOMPARE(wireText(message),
                 wireText(std::string(R"({"type":"verdict","task":41,"attempt":1,"verdict":")") +
                          std::string(wireName(verdict)) + "\"}"));
        auto parsed = parseTaskVerdict(overTheWire(message).control);
        QVERIFY(parsed);
        QCOMPARE(parsed->verdict, verdict);
        QCOMPARE(parsed->ref, (TaskRef{41, 1}));
    }
    QCOMPARE(wireName(Verdict::Accepted), std::string_view("accepted"));
}

void TestVolunteerMessages::verdictFields() {
    const Message valid = toMessage(TaskVerdict{{41, 1}, Verdict::Rejected});
    checkEveryField(valid, onControl(parseTaskVerdict), {});
    auto control = valid.control;
    control["verdict"] = "maybe";
    QVERIFY(!parseTaskVerdict(control));
}

QTEST_APPLESS_MAIN(TestVolunteerMessages)
#include "test_volunteer_messages.moc"
