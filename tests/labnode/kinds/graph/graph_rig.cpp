#include "labnode/kinds/graph/graph_rig.hpp"

#include <algorithm>
#include <cmath>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "node/secrets.hpp"
#include "support/random_tensors.hpp"

namespace goblin::labnode::testing {

namespace json = boost::json;

namespace {

constexpr std::int64_t kRows = 8, kInner = 128, kCols = 4;

net::Message submitMatmulRelu(GraphVerification verification) {
    json::object graph{{"catalog", 3},
                       {"inputs",
                        {{{"id", 0}, {"dtype", "f32"}, {"shape", {kRows, kInner}}},
                         {{"id", 1}, {"dtype", "f32"}, {"shape", {kInner, kCols}}}}},
                       {"constants", json::array{}},
                       {"nodes",
                        {{{"id", 2}, {"op", "matmul"}, {"args", {0, 1}}, {"attrs", json::object{}}},
                         {{"id", 3}, {"op", "relu"}, {"args", {2}}, {"attrs", json::object{}}}}},
                       {"outputs", {3}}};
    json::object control{{"type", "submit_graph"},
                         {"id", 7},
                         {"graph", std::move(graph)},
                         {"batch", {{"inputs", {0, nullptr}}, {"outputs", {0}}, {"chunks", 2}}},
                         {"tensors", 2}};
    if (verification == GraphVerification::Freivalds)
        control["verification"] = "freivalds";
    return net::Message{std::move(control),
                        {std::make_shared<const core::Tensor>(
                             goblin::testing::randomTensor(core::DType::F32, {kRows, kInner}, 31)),
                         std::make_shared<const core::Tensor>(goblin::testing::randomTensor(
                             core::DType::F32, {kInner, kCols}, 32))}};
}

} // namespace

TrustSettings noAudits() {
    TrustSettings chosen;
    chosen.probationAudits = 0;
    chosen.auditFloor = 0.0;
    chosen.sharedAddressRate = 0.0;
    return chosen;
}

TrustSettings alwaysAudited() {
    TrustSettings chosen = noAudits();
    chosen.auditFloor = 1.0;
    chosen.fullAuditShare = 0.0;
    return chosen;
}

std::vector<core::Tensor> researcherOutputs(std::vector<core::Tensor> outputs) {
    outputs.resize(std::min<std::size_t>(outputs.size(), 1));
    return outputs;
}

bool sameBits(const std::vector<core::Tensor>& a, const std::vector<core::Tensor>& b) {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].dtype() != b[i].dtype() || a[i].shape() != b[i].shape() ||
            !std::equal(a[i].bytes().begin(), a[i].bytes().end(), b[i].bytes().begin(),
                        b[i].bytes().end()))
            return false;
    return true;
}

GraphRig::GraphRig(TrustSettings settings, GraphVerification verification)
    : trust(rig.context, settings), path(rig.context, rig.peers),
      scheduler(rig.context, rig.peers, path, SchedulerSettings{}),
      decisions(rig.context, book, scheduler, path, rig.peers, trust, hooks()) {
    path.setObserver([this](const VerdictRecord& verdict) { trust.onVerdict(verdict); });
    trust.addQuarantineListener([this](const std::string& volunteerId, const std::string&) {
        decisions.onQuarantined(volunteerId);
        ++recorded.quarantinesHandled;
    });
    setUpJob(verification);
}

DecisionHooks GraphRig::hooks() {
    return DecisionHooks{
        [this](GraphTask& task) {
            ++recorded.opinionsWanted[task.id];
            book.wantOpinion(task, "one more opinion wanted");
        },
        [this](GraphTask& task) { ++recorded.decided[task.id]; },
        [this](GraphJob&, const Error& error) { recorded.jobFailures.push_back(error.message); },
        [this](GraphJob&) { ++recorded.rechecksDone; },
        {}, // rejudge: the decisions' own
        [this](GraphTask& task) { ++recorded.outputsReplaced[task.id]; }};
}

void GraphRig::setUpJob(GraphVerification verification) {
    NodeStore& store = rig.node.store;
    auto researcher = store.addResearcher("r@lab.example", hashSecret("tok"));
    if (!researcher) {
        m_setupError = researcher.error().message;
        return;
    }
    auto intake = takeInGraph(submitMatmulRelu(verification), VolunteerPool{2, 0, 0},
                              GraphIntakeSettings{}, rig.node.blobs);
    if (!intake) {
        m_setupError = intake.error().message;
        return;
    }
    const GraphJobRow row{"g-test",        *researcher,    JobState::Running, 2,
                          intake->request, intake->inputs, rig.node.now,      {}};
    auto tasks = insertGraphJobAndTasks(store.database(), row);
    if (!tasks) {
        m_setupError = tasks.error().message;
        return;
    }
    GraphJob job;
    job.id = row.id;
    job.researcher = row.researcherId;
    job.submission = std::move(intake->submission);
    job.chunks = std::move(intake->chunks);
    jobId = book.add(std::move(job), *tasks, rig.node.blobs).id;
    for (const GraphTaskRow& task : *tasks)
        taskIds.push_back(task.id);
}

std::vector<core::Tensor> GraphRig::reference(std::size_t chunk) {
    const GraphChunk& c = job().chunks.at(chunk);
    return reference::runGraph(c.graph, c.plan, valuesOf(c.inputs)).value();
}

verify::Replica GraphRig::honest(std::size_t chunk, const std::string& volunteer) {
    verify::Replica replica;
    replica.volunteerId = volunteer;
    replica.backend = "cpu-reference"; // canonical: compared bit for bit
    replica.computeSeconds = 0.01;
    replica.outputs = reference(chunk);
    return replica;
}

verify::Replica GraphRig::lying(std::size_t chunk, const std::string& volunteer) {
    verify::Replica replica = honest(chunk, volunteer);
    for (float& value : replica.outputs.at(0).values<float>())
        if (value > 0) {
            value = std::nextafter(value, INFINITY);
            break;
        }
    return replica;
}

verify::Replica GraphRig::lazy(std::size_t chunk, const std::string& volunteer) {
    verify::Replica replica = honest(chunk, volunteer);
    for (core::Tensor& output : replica.outputs)
        std::fill(output.bytes().begin(), output.bytes().end(), std::byte{0});
    return replica;
}

std::int64_t GraphRig::add(GraphTask& task, verify::Replica replica, const std::string& address) {
    replica.attempt = ++m_attempts[task.id];
    replica.address = address;
    task.involved.insert(replica.volunteerId);
    task.addresses.insert(address);
    const std::int64_t attempt = replica.attempt;
    decisions.addReplica(task, std::move(replica), 0);
    return attempt;
}

bool GraphRig::waitDecided(std::size_t chunk) {
    const std::int64_t id = taskIds.at(chunk);
    return rig.node.waitUntil([&] { return recorded.decided[id] > 0; });
}

bool GraphRig::settle() {
    bool back = false;
    boost::asio::post(rig.node.workers,
                      [&] { boost::asio::post(rig.node.core, [&] { back = true; }); });
    return rig.node.waitUntil([&] { return back; });
}

std::string GraphRig::verdictOf(std::int64_t taskId, std::int64_t attempt) {
    auto query = rig.node.store.database().prepare(
        "SELECT verdict || ' ' || method FROM graph_results WHERE task_id = ? AND attempt = ?");
    query.bind(1, taskId).bind(2, attempt);
    return query.step().value_or(false) ? query.columnText(0) : std::string();
}

std::int64_t GraphRig::countResults(const std::string& where) {
    return queryInt(rig.node.store, "SELECT count(*) FROM graph_results WHERE " + where);
}

std::string GraphRig::storedText(std::int64_t taskId) {
    auto query = rig.node.store.database().prepare(
        "SELECT outputs FROM graph_tasks WHERE id = ? AND state = 'accepted'");
    query.bind(1, taskId);
    return query.step().value_or(false) ? query.columnText(0) : std::string();
}

std::vector<core::Tensor> GraphRig::storedOutputs(std::int64_t taskId) {
    json::error_code ec;
    const json::value stored = json::parse(storedText(taskId), ec);
    if (ec || !stored.is_array())
        return {};
    return loadTensors(rig.node.blobs, stored.get_array()).value_or(std::vector<core::Tensor>{});
}

} // namespace goblin::labnode::testing
