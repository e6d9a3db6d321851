// docs/protocol.md stays true: every ```json block in it is one complete control message that the
// typed messages parse and write back field for field; every message type has an example; every
// "catalog" in an example is the build's catalog version; example graphs decode and validate.
#include <QtTest/QtTest>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "goblin/core/graph/graph.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/ops/op_code.hpp"
#include "goblin/net/messages/handshake.hpp"
#include "goblin/net/messages/job_control_messages.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "goblin/net/messages/plan_messages.hpp"
#include "goblin/net/messages/quota_messages.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "goblin/net/messages/row_block_messages.hpp"
#include "goblin/net/messages/train_data_messages.hpp"
#include "goblin/net/messages/upload_messages.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "message_checks.hpp"

using namespace goblin;
using namespace goblin::net;
using namespace goblin::net::testing;
namespace json = boost::json;

namespace {

std::vector<std::string> jsonBlocks(const std::string& text) {
    std::vector<std::string> blocks;
    const std::string open = "```json\n";
    for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
        at += open.size();
        const std::size_t end = text.find("\n```", at);
        if (end == std::string::npos)
            break;
        blocks.push_back(text.substr(at, end - at));
        at = end;
    }
    return blocks;
}

void collectCatalogs(const json::value& value, std::vector<json::value>& found) {
    if (value.is_array()) {
        for (const json::value& entry : value.get_array())
            collectCatalogs(entry, found);
        return;
    }
    if (!value.is_object())
        return;
    for (const auto& entry : value.get_object()) {
        if (entry.key() == "catalog")
            found.push_back(entry.value());
        collectCatalogs(entry.value(), found);
    }
}

// Tensors as the example announces them: the declared inputs of a graph, the dtype of a task.
std::vector<TensorPtr> tensorsFor(const json::object& control) {
    std::vector<TensorPtr> tensors;
    const auto* count = control.if_contains("tensors");
    if (!count)
        return tensors;
    core::DType dtype = core::DType::F32;
    if (const auto* name = control.if_contains("dtype"); name && name->is_string())
        dtype = core::dtypeFromWireName(name->get_string()).value_or(dtype);
    for (std::int64_t i = 0; i < count->to_number<std::int64_t>(); ++i)
        tensors.push_back(smallTensor(dtype, {1}));
    const auto* graph = control.if_contains("graph");
    if (!graph || !graph->is_object())
        return tensors;
    auto decoded = core::graph::decodeGraph(json::serialize(*graph));
    if (!decoded)
        return tensors;
    tensors.clear();
    const auto* refs = control.if_contains("input_refs");
    for (std::size_t i = 0; i < decoded->inputs.size(); ++i) {
        // Inputs named by digest without "keep" do not follow the control object.
        if (refs && refs->is_array() && i < refs->get_array().size()) {
            const json::value& ref = refs->get_array()[i];
            if (ref.is_object() && !ref.get_object().contains("keep"))
                continue;
        }
        const auto& input = decoded->inputs[i];
        tensors.push_back(smallTensor(input.spec.dtype, input.spec.shape));
    }
    return tensors;
}

template <class Parsed> Expected<Message> written(const Expected<Parsed>& parsed) {
    if (!parsed)
        return tl::unexpected(parsed.error());
    return toMessage(*parsed);
}

template <class Parsed, class Write>
Expected<Message> writtenWith(const Expected<Parsed>& parsed, Write write) {
    if (!parsed)
        return tl::unexpected(parsed.error());
    return write(*parsed);
}

// Parses an example with its typed parser and writes it back; `variant` names which one.
Expected<Message> reparse(const Message& message, std::string& variant) {
    const auto type = messageTypeFromWire(message.type());
    variant = std::string(message.type());
    if (!type)
        return makeError(ErrorCode::InvalidMessage, std::string("unknown type '") + variant + "'");
    const json::object& control = message.control;
    const bool graph = control.contains("op") && control.at("op") == "graph";
    switch (*type) {
    case MessageType::Hello:
        variant += control.contains("capabilities") ? " (volunteer)" : " (researcher)";
        if (control.contains("capabilities"))
            return written(parseVolunteerHello(control));
        return written(parseResearcherHello(control));
    case MessageType::Welcome:
        return written(parseWelcome(control));
    case MessageType::Error:
        return written(parseErrorReply(control));
    case MessageType::SubmitMatmul:
        return written(parseSubmitMatmul(message));
    case MessageType::SubmitGraph:
        return written(parseSubmitGraph(message));
    case MessageType::JobAccepted:
        if (isTrainJobAccepted(control)) {
            variant += " (train)";
            return written(parseTrainJobAccepted(control));
        }
        variant += isGraphJobAccepted(control) ? " (graph)" : " (matmul)";
        if (isGraphJobAccepted(control))
            return written(parseGraphJobAccepted(control));
        return written(parseMatmulJobAccepted(control));
    case MessageType::Progress:
        return written(parseProgress(control));
    case MessageType::JobStatus:
        return written(parseJobStatus(control));
    case MessageType::Fetch:
        return written(parseFetch(control));
    case MessageType::Release:
        return written(parseRelease(control));
    case MessageType::Released:
        return written(parseReleased(control));
    case MessageType::JobDone:
        return written(parseJobDone(message));
    case MessageType::JobFailed:
        return written(parseJobFailed(control));
    case MessageType::Task:
        variant += graph ? " (graph)" : " (matmul)";
        if (graph)
            return written(parseGraphTask(message));
        return written(parseMatmulTask(message));
    case MessageType::Result:
        variant += graph ? " (graph)" : " (matmul)";
        return written(parseTaskResult(message));
    case MessageType::TaskError:
        variant += graph ? " (graph)" : " (matmul)";
        return written(parseTaskError(control));
    case MessageType::Verdict:
        return written(parseTaskVerdict(control));
    case MessageType::ForgetInputs:
        return written(parseForgetInputs(control));
    case MessageType::Audit:
        return written(parseAudit(control));
    case MessageType::AuditReport:
        return written(parseAuditReport(message));
    case MessageType::SubmitTrain:
        return written(parseSubmitTrain(message));
    case MessageType::TrainRound:
        return written(parseTrainRound(control));
    case MessageType::Cancel:
        return written(parseCancel(control));
    case MessageType::Cancelled:
        return written(parseCancelled(control));
    case MessageType::ListJobs:
        return written(parseListJobs(control));
    case MessageType::JobList:
        return written(parseJobList(control));
    case MessageType::TrainBatch:
        variant += control.contains("end") ? " (end)" : " (batch)";
        return written(parseTrainBatch(message));
    case MessageType::BatchAccepted:
        return written(parseBatchAccepted(control));
    case MessageType::FetchRows:
        return written(parseFetchRows(control));
    case MessageType::ResultRows:
        return written(parseResultRows(message));
    case MessageType::CheckQuota:
        return written(parseCheckQuota(control));
    case MessageType::Quota:
        return written(parseQuota(control));
    case MessageType::PlanGraph:
        return written(parsePlanGraph(control));
    case MessageType::GraphPlan:
        return written(parseGraphPlan(control));
    case MessageType::ResultTile:
        return written(parseResultTile(message));
    case MessageType::Upload:
        return written(parseUpload(control));
    case MessageType::UploadReady:
        return writtenWith(parseUploadReady(control), uploadReadyMessage);
    case MessageType::UploadRows:
        return written(parseUploadRows(message));
    case MessageType::RowsStored:
        return written(parseRowsStored(control));
    case MessageType::DropUpload:
        return written(parseDropUpload(control));
    case MessageType::UploadDropped:
        return writtenWith(parseUploadDropped(control), uploadDroppedMessage);
    case MessageType::Count:
        break;
    }
    return makeError(ErrorCode::InvalidMessage, std::string("no parser for '") + variant + "'");
}

} // namespace

class TestProtocolDoc : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void everyExampleParsesAndWritesBack();
    void everyMessageHasAnExample();
    void catalogsAreTheBuildsVersion();
    void exampleGraphsValidate();

private:
    std::vector<json::object> m_examples;
};

void TestProtocolDoc::initTestCase() {
    std::ifstream file(GOBLIN_SOURCE_DIR "/docs/protocol.md");
    QVERIFY2(file, "cannot open docs/protocol.md");
    std::stringstream text;
    text << file.rdbuf();
    for (const std::string& block : jsonBlocks(text.str())) {
        json::error_code ec;
        json::value value = json::parse(block, ec);
        QVERIFY2(!ec && value.is_object(), (std::string("not one JSON object:\n") + block).c_str());
        m_examples.push_back(value.as_object());
    }
    QVERIFY(m_examples.size() >= 20);
}

void TestProtocolDoc::everyExampleParsesAndWritesBack() {
    for (const json::object& example : m_examples) {
        const Message message{example, tensorsFor(example)};
        std::string variant;
        auto rebuilt = reparse(message, variant);
        const std::string text = json::serialize(example);
        QVERIFY2(rebuilt,
                 (variant + ": " + (rebuilt ? "" : rebuilt.error().message) + "\n" + text).c_str());
        QVERIFY2(rebuilt->control == example, (std::string("written back differently:\n") + text +
                                               "\n" + json::serialize(rebuilt->control))
                                                  .c_str());
    }
}

void TestProtocolDoc::everyMessageHasAnExample() {
    std::set<std::string> variants;
    for (const json::object& example : m_examples) {
        std::string variant;
        (void)reparse(Message{example, tensorsFor(example)}, variant);
        variants.insert(variant);
    }
    const std::set<std::string> expected{"hello (researcher)",
                                         "hello (volunteer)",
                                         "welcome",
                                         "error",
                                         "submit_matmul",
                                         "submit_graph",
                                         "job_accepted (matmul)",
                                         "job_accepted (graph)",
                                         "job_accepted (train)",
                                         "submit_train",
                                         "train_round",
                                         "train_batch (batch)",
                                         "train_batch (end)",
                                         "batch_accepted",
                                         "progress",
                                         "job_status",
                                         "fetch",
                                         "release",
                                         "released",
                                         "job_done",
                                         "job_failed",
                                         "task (matmul)",
                                         "task (graph)",
                                         "result (matmul)",
                                         "result (graph)",
                                         "task_error (matmul)",
                                         "task_error (graph)",
                                         "verdict"};
    for (const std::string& variant : expected)
        QVERIFY2(variants.contains(variant),
                 (std::string("docs/protocol.md has no example of ") + variant).c_str());
    for (std::size_t i = 0; i < kMessageTypeCount; ++i) {
        const std::string name(wireName(static_cast<MessageType>(i)));
        const bool shown = std::any_of(variants.begin(), variants.end(), [&](const std::string& v) {
            return v == name || v.starts_with(name + " (");
        });
        QVERIFY2(shown, (std::string("docs/protocol.md has no example of ") + name).c_str());
    }
}

void TestProtocolDoc::catalogsAreTheBuildsVersion() {
    static_assert(kCatalogVersion == core::ops::kCatalogVersion, "net and core share one catalog");
    std::size_t checked = 0;
    for (const json::object& example : m_examples) {
        std::vector<json::value> catalogs;
        collectCatalogs(example, catalogs);
        for (const json::value& catalog : catalogs) {
            QVERIFY2(catalog.is_int64() && catalog.get_int64() == kCatalogVersion,
                     (std::string("an example's catalog is not ") +
                      std::to_string(kCatalogVersion) + ": " + json::serialize(example))
                         .c_str());
            ++checked;
        }
    }
    QVERIFY(checked >= 6);
}

void TestProtocolDoc::exampleGraphsValidate() {
    std::size_t graphs = 0;
    for (const json::object& example : m_examples) {
        const auto* graph = example.if_contains("graph");
        if (!graph)
            continue;
        auto decoded = core::graph::decodeGraph(json::serialize(*graph));
        QVERIFY2(decoded, decoded ? "" : decoded.error().message.c_str());
        auto plan = core::graph::validateGraph(*decoded);
        QVERIFY2(plan, plan ? "" : plan.error().message.c_str());
        ++graphs;
        if (example.at("type") == "plan_graph") { // no tensors: the graph declares the inputs
            QVERIFY(!example.contains("tensors"));
            continue;
        }
        // Inputs named by digest without "keep" do not follow (tensorsFor counts the rest).
        QCOMPARE(static_cast<std::int64_t>(tensorsFor(example).size()),
                 example.at("tensors").to_number<std::int64_t>());
        if (!example.contains("input_refs"))
            QCOMPARE(static_cast<std::int64_t>(decoded->inputs.size()),
                     example.at("tensors").to_number<std::int64_t>());
    }
    // submit_graph, a graph task, one with inputs by digest, one with gemm_nodes, one with
    // omit_witnesses, submit_train, plan_graph
    QCOMPARE(graphs, std::size_t{7});
}

QTEST_APPLESS_MAIN(TestProtocolDoc)
#include "test_protocol_doc.moc"
