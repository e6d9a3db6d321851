// Tests of the typed researcher messages: exact wire form, round trip, and refusal of every
// malformed field.
#include <QtTest/QtTest>

#include "goblin/net/messages/plan_messages.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "goblin/net/messages/row_block_messages.hpp"
#include "goblin/net/messages/train_data_messages.hpp"
#include "goblin/net/messages/upload_messages.hpp"
#include "message_checks.hpp"

using namespace goblin;
using namespace goblin::net;
using namespace goblin::net::testing;
namespace json = boost::json;

namespace {

SubmitGraph sampleSubmitGraph() {
    SubmitGraph submit;
    submit.id = 2;
    submit.graph = json::object{{"catalog", 3}, {"nodes", json::array{}}};
    submit.batch =
        json::object{{"inputs", json::array{0}}, {"outputs", json::array{0}}, {"chunks", 4}};
    submit.inputs = {smallTensor(core::DType::F32, {4, 2})};
    return submit;
}

JobDone sampleJobDone() {
    return JobDone{3, "j-77", json::object{{"tiles", 4}}, {smallTensor(core::DType::F64, {2, 2})}};
}

AuditReport sampleAuditReport() {
    return AuditReport{0,
                       "g-5",
                       "corrected",
                       {JobAuditEntry{"v-1", "graph task 3 overturned", "corrected", 2, 1, 1.5e9}},
                       {smallTensor(core::DType::F32, {2, 2})}};
}

} // namespace

class TestResearcherMessages : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void submitMatmulWireForm();
    void submitMatmulFields();
    void submitGraphRoundTrip();
    void submitGraphFields();
    void jobAcceptedBothKinds();
    void jobAcceptedFields();
    void progressAndStatus();
    void progressAndStatusFields();
    void jobRequests();
    void jobDoneRoundTrip();
    void jobDoneFields();
    void streamedTilesWireForms();
    void jobFailedRoundTrip();
    void auditRoundTrip();
    void auditReportFields();
    void trainBatchRoundTrip();
    void trainBatchFields();
    void rowBlockFields();
    void planMessagesFields();
};

void TestResearcherMessages::submitMatmulWireForm() {
    const auto a = smallTensor(core::DType::F32, {2, 3});
    const auto b = smallTensor(core::DType::F32, {3, 4});
    const Message message = toMessage(SubmitMatmul{2, MatrixShape{64, 32}, a, b, {}});
    QCOMPARE(wireText(message),
             wireText(R"({"type":"submit_matmul","id":2,"tile":[64,32],"tensors":2})"));
    QCOMPARE(message.tensors.size(), std::size_t{2});
    auto parsed = parseSubmitMatmul(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->tile.value_or(MatrixShape{}), (MatrixShape{64, 32}));
    QCOMPARE(parsed->a, a);
    QCOMPARE(parsed->b, b);
    auto untiled =
        parseSubmitMatmul(overTheWire(toMessage(SubmitMatmul{2, std::nullopt, a, b, {}})));
    QVERIFY(untiled);
    QVERIFY(!untiled->tile);
    // Staged inputs: two upload ids and no tensor.
    const Message staged =
        toMessage(SubmitMatmul{3, std::nullopt, nullptr, nullptr, {"u-a1", "u-b2"}});
    QCOMPARE(wireText(staged),
             wireText(R"({"type":"submit_matmul","id":3,"inputs":["u-a1","u-b2"]})"));
    auto named = parseSubmitMatmul(overTheWire(staged));
    QVERIFY(named && named->uploads == (std::vector<std::string>{"u-a1", "u-b2"}) && !named->a);
    for (json::value bad : {json::value(json::array{"u-a1"}), json::value(json::array{"u-a1", 2}),
                            json::value("u-a1"), json::value(json::array{"u-a1", ""})}) {
        Message wrong = staged;
        wrong.control["inputs"] = bad;
        QVERIFY(!parseSubmitMatmul(wrong));
    }
    Message both = toMessage(SubmitMatmul{3, std::nullopt, a, b, {}}); // inputs and tensors
    both.control["inputs"] = json::array{"u-a1", "u-b2"};
    QVERIFY(!parseSubmitMatmul(both));
}

void TestResearcherMessages::submitMatmulFields() {
    const auto a = smallTensor(core::DType::F32, {2, 3});
    const Message valid = toMessage(SubmitMatmul{2, MatrixShape{1, 1}, a, a, {}});
    checkEveryField(valid, parseSubmitMatmul, {"id", "tile", "tensors"});
    for (json::value bad : {json::value(json::array{0, 4}), json::value(json::array{4}),
                            json::value(json::array{4, 1.5}), json::value(json::array{4, 4, 4})}) {
        Message wrong = valid;
        wrong.control["tile"] = bad;
        QVERIFY(!parseSubmitMatmul(wrong));
    }
    Message nullTile = valid;
    nullTile.control["tile"] = nullptr;
    QVERIFY(parseSubmitMatmul(nullTile));
    Message one = valid;
    one.tensors.pop_back();
    one.control.erase("tensors");
    QVERIFY(!parseSubmitMatmul(one));
    Message miscounted = valid;
    miscounted.control["tensors"] = 3;
    QVERIFY(!parseSubmitMatmul(miscounted));
}

void TestResearcherMessages::submitGraphRoundTrip() {
    const SubmitGraph submit = sampleSubmitGraph();
    const Message message = toMessage(submit);
    QCOMPARE(wireText(message),
             wireText(R"({"type":"submit_graph","id":2,"graph":{"catalog":3,"nodes":[]},
                 "batch":{"inputs":[0],"outputs":[0],"chunks":4},"tensors":1})"));
    auto parsed = parseSubmitGraph(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->graph, submit.graph);
    QCOMPARE(parsed->batch.value_or(json::object{}), *submit.batch);
    QCOMPARE(parsed->inputs, submit.inputs);
}

void TestResearcherMessages::submitGraphFields() {
    checkEveryField(toMessage(sampleSubmitGraph()), parseSubmitGraph, {"id", "batch", "tensors"});
    // The node has always answered these with invalid_input.
    Message wrong = toMessage(sampleSubmitGraph());
    wrong.control["graph"] = json::array{};
    QCOMPARE(parseSubmitGraph(wrong).error().code, ErrorCode::InvalidInput);
}

void TestResearcherMessages::jobAcceptedBothKinds() {
    const Message matmul =
        toMessage(MatmulJobAccepted{2, "j-1", 16, {1024, 1024}, {4096, 4096}, core::DType::F64});
    QCOMPARE(wireText(matmul),
             wireText(R"({"type":"job_accepted","id":2,"job":"j-1","tiles":16,"tile":[1024,1024],
                 "shape":[4096,4096],"dtype":"f64"})"));
    QVERIFY(!isGraphJobAccepted(matmul.control));
    auto parsed = parseMatmulJobAccepted(overTheWire(matmul).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->tiles, std::int64_t{16});
    QCOMPARE(parsed->shape, (MatrixShape{4096, 4096}));
    QCOMPARE(parsed->dtype, core::DType::F64);

    const Message graph = toMessage(GraphJobAccepted{2, "g-1", 4});
    QCOMPARE(wireText(graph),
             wireText(R"({"type":"job_accepted","id":2,"job":"g-1","kind":"graph","tasks":4})"));
    QVERIFY(isGraphJobAccepted(graph.control));
    auto graphParsed = parseGraphJobAccepted(overTheWire(graph).control);
    QVERIFY(graphParsed);
    QCOMPARE(graphParsed->tasks, std::int64_t{4});
    QVERIFY(!parseMatmulJobAccepted(graph.control));
    QVERIFY(!parseGraphJobAccepted(matmul.control));
}

void TestResearcherMessages::jobAcceptedFields() {
    const Message matmul =
        toMessage(MatmulJobAccepted{2, "j-1", 16, {1024, 1024}, {4096, 4096}, core::DType::F32});
    checkEveryField(matmul, onControl(parseMatmulJobAccepted), {"id"});
    Message badDtype = matmul;
    badDtype.control["dtype"] = "f16";
    QVERIFY(!parseMatmulJobAccepted(badDtype.control));
    checkEveryField(toMessage(GraphJobAccepted{2, "g-1", 4}), onControl(parseGraphJobAccepted),
                    {"id"});
}

void TestResearcherMessages::progressAndStatus() {
    const Message progress = toMessage(Progress{"j-1", 5, 16, {}});
    QCOMPARE(wireText(progress),
             wireText(R"({"type":"progress","job":"j-1","done":5,"total":16})"));
    auto parsed = parseProgress(overTheWire(progress).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->done, std::int64_t{5});
    QCOMPARE(parsed->total, std::int64_t{16});
    QVERIFY(parsed->waiting.empty());
    const Message waiting = toMessage(Progress{"j-1", 5, 16, "no volunteer is connected"});
    QCOMPARE(wireText(waiting), wireText(R"({"type":"progress","job":"j-1","done":5,"total":16,
                                             "waiting":"no volunteer is connected"})"));
    QCOMPARE(parseProgress(overTheWire(waiting).control)->waiting,
             std::string("no volunteer is connected"));
    auto notText = waiting.control;
    notText["waiting"] = 3;
    QVERIFY(!parseProgress(notText));

    const Message status = toMessage(JobStatus{3, "j-1", "running", 5, 16});
    QCOMPARE(wireText(status), wireText(R"({"type":"job_status","id":3,"job":"j-1",
                                            "state":"running","done":5,"total":16})"));
    auto statusParsed = parseJobStatus(overTheWire(status).control);
    QVERIFY(statusParsed);
    QCOMPARE(statusParsed->state, std::string("running"));
}

void TestResearcherMessages::progressAndStatusFields() {
    checkEveryField(toMessage(Progress{"j-1", 5, 16, {}}), onControl(parseProgress), {});
    QVERIFY(!parseProgress(toMessage(Progress{"j-1", 17, 16, {}}).control));
    QVERIFY(!parseProgress(toMessage(Progress{"j-1", -1, 16, {}}).control));
    checkEveryField(toMessage(JobStatus{3, "j-1", "done", 16, 16}), onControl(parseJobStatus),
                    {"id"});
    QVERIFY(!parseJobStatus(toMessage(JobStatus{3, "j-1", "released", 16, 16}).control));
    QVERIFY(parseJobStatus(toMessage(JobStatus{3, "j-1", "failed", 1, 16}).control));
}

void TestResearcherMessages::jobRequests() {
    QCOMPARE(wireText(toMessage(Fetch{3, "j-1"})),
             wireText(R"({"type":"fetch","id":3,"job":"j-1"})"));
    QCOMPARE(wireText(toMessage(Release{4, "j-1"})),
             wireText(R"({"type":"release","id":4,"job":"j-1"})"));
    QCOMPARE(wireText(toMessage(Released{4, "j-1"})),
             wireText(R"({"type":"released","id":4,"job":"j-1"})"));
    QCOMPARE(parseFetch(toMessage(Fetch{3, "g-2"}).control)->job, std::string("g-2"));
    QCOMPARE(parseRelease(toMessage(Release{4, "j-1"}).control)->id, std::int64_t{4});
    QCOMPARE(parseReleased(toMessage(Released{4, "j-1"}).control)->job, std::string("j-1"));
    checkEveryField(toMessage(Fetch{3, "j-1"}), onControl(parseFetch), {"id"});
    checkEveryField(toMessage(Release{3, "j-1"}), onControl(parseRelease), {"id"});
    checkEveryField(toMessage(Released{3, "j-1"}), onControl(parseReleased), {"id"});
    // A fetch is not a release: the parsers check the type.
    QVERIFY(!parseRelease(toMessage(Fetch{3, "j-1"}).control));
    QVERIFY(!parseFetch(toMessage(Fetch{3, std::string(300, 'j')}).control));
}

void TestResearcherMessages::jobDoneRoundTrip() {
    const JobDone done = sampleJobDone();
    const Message message = toMessage(done);
    QCOMPARE(
        wireText(message),
        wireText(R"({"type":"job_done","id":3,"job":"j-77","summary":{"tiles":4},"tensors":1})"));
    auto parsed = parseJobDone(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->summary, done.summary);
    QCOMPARE(parsed->outputs, done.outputs);
    // Pushed to a watcher, the id is 0 and still written.
    QCOMPARE(toMessage(JobDone{0, "j-1", {}, done.outputs}).control.at("id"), json::value(0));
}

// Protocol 8: plan_graph (a submit_graph's fields without tensors) and its reply graph_plan.
void TestResearcherMessages::planMessagesFields() {
    const PlanGraph request{5, json::object{{"catalog", 3}, {"nodes", json::array{}}},
                            json::object{{"inputs", json::array{0}}}, "freivalds", 64};
    checkEveryField(toMessage(request), onControl(parsePlanGraph),
                    {"id", "batch", "verification", "rows"});
    auto back = parsePlanGraph(toMessage(request).control);
    QVERIFY(back.has_value());
    QCOMPARE(back->rows.value_or(0), std::int64_t{64});
    QCOMPARE(back->verification.value_or(""), std::string("freivalds"));
    // A hostile request with tensors is refused: the graph declares its inputs, nothing uploads.
    Message withTensors = toMessage(request);
    withTensors.control["tensors"] = 2;
    auto refused = parsePlanGraph(withTensors.control);
    QVERIFY(!refused.has_value());
    QVERIFY(refused.error().message.find("tensors") != std::string::npos);
    Message noRows = toMessage(request);
    noRows.control["rows"] = 0;
    QVERIFY(!parsePlanGraph(noRows.control).has_value());

    GraphPlan plan;
    plan.id = 5;
    plan.tasks = 4;
    plan.ranges = 2;
    plan.budgetBytes = 3 << 20;
    plan.volunteers = 2;
    plan.largestVolunteerBytes = 3 << 20;
    plan.largestTaskBytes = 2 << 20;
    plan.boundaryBytes = 4096;
    plan.trafficBytes = 9 << 20;
    plan.flops = 2.5e8;
    plan.stages = {{2, 2 << 20, 0, 1.25e8}, {2, 1 << 20, 2048, 1.25e8}};
    plan.waits = "no connected volunteer lends the memory its tasks need";
    checkEveryField(toMessage(plan), onControl(parseGraphPlan), {"id", "waits", "why_whole"});
    auto reply = parseGraphPlan(toMessage(plan).control);
    QVERIFY(reply.has_value());
    QCOMPARE(reply->stages.size(), std::size_t{2});
    QCOMPARE(reply->stages[1].boundaryInBytes, std::int64_t{2048});
    QCOMPARE(reply->waits, plan.waits);
    Message negative = toMessage(plan);
    negative.control["largest_task_bytes"] = -1;
    QVERIFY(!parseGraphPlan(negative.control).has_value());
    Message badStage = toMessage(plan);
    badStage.control["stages"].as_array()[0].as_object()["tasks"] = "two";
    QVERIFY(!parseGraphPlan(badStage.control).has_value());
    // Tiles (planner 4): optional, absent when nothing is tiled, and checked when present.
    QVERIFY(!toMessage(plan).control.contains("tiled_matmuls"));
    QCOMPARE(reply->tiledMatmuls, std::int64_t{0});
    plan.tiledMatmuls = 3;
    plan.stages[1].tiles = 5;
    const Message tiled = toMessage(plan);
    QVERIFY(!tiled.control.at("stages").as_array()[0].as_object().contains("tiles"));
    auto tiledReply = parseGraphPlan(tiled.control);
    QVERIFY(tiledReply.has_value());
    QCOMPARE(tiledReply->tiledMatmuls, std::int64_t{3});
    QCOMPARE(tiledReply->stages[0].tiles, std::int64_t{0});
    QCOMPARE(tiledReply->stages[1].tiles, std::int64_t{5});
    Message badTiles = tiled;
    badTiles.control["tiled_matmuls"] = -2;
    QVERIFY(!parseGraphPlan(badTiles.control).has_value());
    badTiles = tiled;
    badTiles.control["stages"].as_array()[1].as_object()["tiles"] = "five";
    QVERIFY(!parseGraphPlan(badTiles.control).has_value());
}

void TestResearcherMessages::jobDoneFields() {
    checkEveryField(toMessage(sampleJobDone()), parseJobDone, {"id", "tensors"});
    Message empty = toMessage(sampleJobDone());
    empty.tensors.clear();
    empty.control.erase("tensors");
    QVERIFY(!parseJobDone(empty));
}

// Protocol 6: "stream" on submit_matmul, "delivery": "tiles" on job_accepted and on a job_done
// that carries no tensor.
void TestResearcherMessages::streamedTilesWireForms() {
    const auto a = smallTensor(core::DType::F32, {2, 3});
    SubmitMatmul submit{2, std::nullopt, a, a, {}};
    submit.stream = true;
    const Message asked = toMessage(submit);
    QCOMPARE(wireText(asked),
             wireText(R"({"type":"submit_matmul","id":2,"stream":true,"tensors":2})"));
    auto parsed = parseSubmitMatmul(overTheWire(asked));
    QVERIFY(parsed && parsed->stream);
    QVERIFY(!parseSubmitMatmul(overTheWire(toMessage(SubmitMatmul{2, std::nullopt, a, a, {}})))
                 ->stream);
    for (json::value bad : {json::value("yes"), json::value(1), json::value(nullptr)}) {
        Message wrong = asked;
        wrong.control["stream"] = bad;
        auto refused = parseSubmitMatmul(wrong);
        QVERIFY(!refused);
        QCOMPARE(refused.error().message, std::string("'stream' must be true or false"));
    }

    MatmulJobAccepted accepted{2, "j-1", 4, {2048, 2048}, {4096, 4096}, core::DType::F32};
    accepted.streamed = true;
    const Message granted = toMessage(accepted);
    QCOMPARE(wireText(granted),
             wireText(R"({"type":"job_accepted","id":2,"job":"j-1","tiles":4,"tile":[2048,2048],
                 "shape":[4096,4096],"dtype":"f32","delivery":"tiles"})"));
    auto grantedParsed = parseMatmulJobAccepted(overTheWire(granted).control);
    QVERIFY(grantedParsed && grantedParsed->streamed);
    Message otherDelivery = granted;
    otherDelivery.control["delivery"] = "rows";
    QVERIFY(!parseMatmulJobAccepted(otherDelivery.control));

    const Message done = toMessage(JobDone{0, "j-1", json::object{{"delivery", "tiles"}}, {}});
    QCOMPARE(wireText(done), wireText(R"({"type":"job_done","id":0,"job":"j-1",
                                          "summary":{"delivery":"tiles"}})"));
    QVERIFY(parseJobDone(overTheWire(done)));
    Message unknown = done;
    unknown.control["summary"] = json::object{{"delivery", "pieces"}};
    QVERIFY(!parseJobDone(unknown));
}

void TestResearcherMessages::jobFailedRoundTrip() {
    const Message message =
        toMessage(JobFailed{"g-1", Error{ErrorCode::InvalidInput, "index 9 out of range"}});
    QCOMPARE(wireText(message), wireText(R"({"type":"job_failed","job":"g-1","code":"invalid_input",
                                             "message":"index 9 out of range"})"));
    auto parsed = parseJobFailed(overTheWire(message).control);
    QVERIFY(parsed);
    QCOMPARE(parsed->error.code, ErrorCode::InvalidInput);
    QCOMPARE(parsed->error.message, std::string("index 9 out of range"));
    checkEveryField(message, onControl(parseJobFailed), {});
}

void TestResearcherMessages::auditRoundTrip() {
    QCOMPARE(wireText(toMessage(Audit{5, "g-5"})),
             wireText(R"({"type":"audit","id":5,"job":"g-5"})"));
    QCOMPARE(parseAudit(toMessage(Audit{5, "g-5"}).control)->job, std::string("g-5"));
    checkEveryField(toMessage(Audit{5, "g-5"}), onControl(parseAudit), {"id"});
    QVERIFY(!parseAudit(toMessage(Fetch{5, "g-5"}).control));

    const Message message = toMessage(sampleAuditReport());
    QCOMPARE(wireText(message),
             wireText(R"({"type":"audit_report","id":0,"job":"g-5","state":"corrected",
                          "audits":[{"volunteer":"v-1","reason":"graph task 3 overturned",
                                     "state":"corrected","tasks":2,"corrected":1,"at":1.5E9}],
                          "tensors":1})"));
    auto parsed = parseAuditReport(overTheWire(message));
    QVERIFY(parsed);
    QCOMPARE(parsed->state, std::string("corrected"));
    QCOMPARE(parsed->audits.size(), std::size_t{1});
    QCOMPARE(parsed->audits[0].corrected, std::int64_t{1});
    QCOMPARE(parsed->audits[0].volunteer, std::string("v-1"));
    QCOMPARE(parsed->outputs.size(), std::size_t{1});
    // A clean job: no audits, no tensors.
    auto clean = parseAuditReport(toMessage(AuditReport{4, "g-6", "clean", {}, {}}));
    QVERIFY(clean);
    QVERIFY(clean->audits.empty() && clean->outputs.empty());
}

void TestResearcherMessages::auditReportFields() {
    checkEveryField(toMessage(sampleAuditReport()), parseAuditReport, {"id", "tensors"});
    for (const char* key : {"volunteer", "reason", "state", "tasks", "corrected", "at"}) {
        Message broken = toMessage(sampleAuditReport());
        broken.control["audits"].as_array()[0].as_object().erase(key);
        QVERIFY2(!parseAuditReport(broken), key);
    }
    Message negative = toMessage(sampleAuditReport());
    negative.control["audits"].as_array()[0].as_object()["tasks"] = -1;
    QVERIFY(!parseAuditReport(negative));
    Message many = toMessage(sampleAuditReport());
    many.control["audits"] = json::array(kMaxAuditEntries + 1, json::object{});
    QVERIFY(!parseAuditReport(many));
}

void TestResearcherMessages::trainBatchRoundTrip() {
    const auto x = smallTensor(core::DType::F32, {8, 3});
    const auto y = smallTensor(core::DType::I64, {8});
    const Message batch = toMessage(TrainBatch{7, "t-5", 2, false, {x, y}});
    QCOMPARE(wireText(batch),
             wireText(R"({"type":"train_batch","id":7,"job":"t-5","batch":2,"tensors":2})"));
    auto parsed = parseTrainBatch(overTheWire(batch));
    QVERIFY(parsed);
    QCOMPARE(parsed->batch, std::int64_t{2});
    QVERIFY(!parsed->end);
    QCOMPARE(parsed->tensors, (std::vector<TensorPtr>{x, y}));
    const Message end = toMessage(TrainBatch{8, "t-5", 3, true, {}});
    QCOMPARE(wireText(end),
             wireText(R"({"type":"train_batch","id":8,"job":"t-5","batch":3,"end":true})"));
    auto ended = parseTrainBatch(overTheWire(end));
    QVERIFY(ended && ended->end && ended->tensors.empty());
    const Message accepted = toMessage(BatchAccepted{7, "t-5", 2});
    QCOMPARE(wireText(accepted),
             wireText(R"({"type":"batch_accepted","id":7,"job":"t-5","batch":2})"));
    auto reply = parseBatchAccepted(overTheWire(accepted).control);
    QVERIFY(reply && reply->job == "t-5" && reply->batch == 2);
}

void TestResearcherMessages::trainBatchFields() {
    const auto x = smallTensor(core::DType::F32, {8, 3});
    const Message valid = toMessage(TrainBatch{7, "t-5", 2, false, {x, x}});
    checkEveryField(valid, parseTrainBatch, {"id", "tensors"});
    Message notBool = toMessage(TrainBatch{7, "t-5", 2, true, {}});
    notBool.control["end"] = "yes";
    QVERIFY(!parseTrainBatch(notBool));
    checkEveryField(toMessage(BatchAccepted{7, "t-5", 2}), onControl(parseBatchAccepted), {"id"});
    Message one = valid; // a batch is x and y
    one.tensors.pop_back();
    one.control["tensors"] = 1;
    QVERIFY(!parseTrainBatch(one));
    Message endWithData = valid; // the end of the data carries none
    endWithData.control["end"] = true;
    QVERIFY(!parseTrainBatch(endWithData));
    Message negative = valid;
    negative.control["batch"] = -1;
    QVERIFY(!parseTrainBatch(negative));
}

void TestResearcherMessages::rowBlockFields() {
    const auto block = smallTensor(core::DType::F32, {4, 3});
    checkEveryField(toMessage(Upload{1, core::DType::F64, 8, 3}), onControl(parseUpload), {"id"});
    Message integer = toMessage(Upload{1, core::DType::F64, 8, 3});
    integer.control["dtype"] = "i64"; // matmul inputs are floating point
    QVERIFY(!parseUpload(integer.control));
    Message empty = toMessage(Upload{1, core::DType::F32, 8, 3});
    empty.control["cols"] = 0;
    QVERIFY(!parseUpload(empty.control));
    checkEveryField(uploadReadyMessage(UploadReply{1, "u-1"}), onControl(parseUploadReady), {"id"});
    checkEveryField(toMessage(UploadRows{2, "u-1", 4, block}), parseUploadRows, {"id", "tensors"});
    checkEveryField(toMessage(RowsStored{2, "u-1", 8}), onControl(parseRowsStored), {"id"});
    checkEveryField(toMessage(DropUpload{3, "u-1"}), onControl(parseDropUpload), {"id"});
    checkEveryField(uploadDroppedMessage(UploadReply{3, "u-1"}), onControl(parseUploadDropped),
                    {"id"});
    checkEveryField(toMessage(FetchRows{4, "j-1", 0, 16}), onControl(parseFetchRows), {"id"});
    checkEveryField(toMessage(ResultRows{4, "j-1", 0, block}), parseResultRows, {"id", "tensors"});
    checkEveryField(toMessage(ResultTile{"j-1", 4, 8, block}), parseResultTile, {"tensors"});
    Message negative = toMessage(ResultTile{"j-1", 4, 8, block});
    negative.control["col0"] = -1;
    QVERIFY(!parseResultTile(negative));
    Message noRows = toMessage(FetchRows{4, "j-1", 0, 16});
    noRows.control["rows"] = 0;
    QVERIFY(!parseFetchRows(noRows.control));
    auto rows = parseUploadRows(overTheWire(toMessage(UploadRows{2, "u-1", 4, block})));
    QVERIFY(rows && rows->upload == "u-1" && rows->row0 == 4 && rows->rows == block);
}

QTEST_APPLESS_MAIN(TestResearcherMessages)
#include "test_researcher_messages.moc"
