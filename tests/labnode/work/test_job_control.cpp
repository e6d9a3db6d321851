// JobControl, the lifecycle's cancel, purge and listing written once for every kind: the
// researcher desk's cancel and list_jobs with fake kinds over real job rows (owners checked,
// another researcher's job and an unknown id refused alike, a finished job refused, a second
// cancel answered again), lab staff's requests carried out at the staff check (a running job's
// purge refused), and a real node's matmul and graph jobs cancelled with leases out: the
// volunteers' late answers are stale, nothing is recorded against them, the researcher hears
// "cancelled" and the blobs are gone.
#include <QtTest/QtTest>

#include <filesystem>

#include "labnode/fake_answers.hpp"
#include "labnode/fake_cluster.hpp"
#include "labnode/fake_kind.hpp"
#include "node/researcher_desk.hpp"
#include "store/job_purge.hpp"
#include "store/job_requests.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

void insertJob(NodeStore& store, const std::string& id, std::int64_t researcher,
               const std::string& state, double created, double finished = 0) {
    auto insert = store.database().prepare(
        "INSERT INTO jobs(id, researcher_id, kind, dtype, m, k, n, tile_rows, tile_cols, a_blob, "
        "b_blob, state, created_at, finished_at) VALUES (?, ?, 'matmul', 'f32', 1, 1, 1, 1, 1, "
        "'a', 'b', ?, ?, nullif(?, 0))");
    insert.bind(1, id);
    insert.bind(2, researcher);
    insert.bind(3, state);
    insert.bind(4, created);
    insert.bind(5, finished);
    QVERIFY(insert.run());
}

struct Rig : RoleRig {
    ResearcherDesk desk{context, peers};
    FakeKind matmul{"matmul"};
    std::shared_ptr<FakePeerLink> link = std::make_shared<FakePeerLink>();
    Peer* researcher = nullptr;

    Rig() {
        matmul.prefix = "j-";
        desk.addKind(matmul);
        researcher = &peers.add(4, link, PeerRole::Researcher);
        researcher->ready = true;
        researcher->researcherId = 1;
        researcher->catalog = 3;
        QVERIFY(node.store.database().execute(
            "INSERT INTO researchers(id, email, token_hash) VALUES (1, 'a@lab.example', 'h1'), "
            "(2, 'b@lab.example', 'h2')"));
        insertJob(node.store, "j-mine", 1, "running", 10);
        insertJob(node.store, "j-done", 1, "done", 20);
        insertJob(node.store, "j-theirs", 2, "running", 30);
    }
    void cancel(const std::string& job, std::int64_t id) {
        desk.onMessage(*researcher,
                       net::Message{{{"type", "cancel"}, {"id", id}, {"job", job}}, {}});
    }
    std::string errorCodeOf(std::int64_t id) const {
        for (const auto& error : link->sentOfType("error"))
            if (error.control.at("id").as_int64() == id)
                return std::string(error.control.at("code").as_string());
        return {};
    }
};

std::string stateOf(NodeStore& store, const std::string& table, const std::string& job) {
    auto query = store.database().prepare("SELECT state FROM " + table + " WHERE id = ?");
    query.bind(1, job);
    return query.step().value_or(false) ? query.columnText(0) : std::string();
}

std::size_t blobCount(const NodeHarness& node) {
    std::size_t count = 0;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(node.m_dir.path().toStdString()))
        count += entry.is_regular_file() && entry.path().extension() == ".bin";
    return count;
}

CoordinatorSettings settings() {
    CoordinatorSettings chosen;
    chosen.leaseSeconds = 30;
    return chosen;
}

} // namespace

class TestJobControl : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void researcherCancelsOnlyItsOwnRunningJobs();
    void listJobsShowsOnlyTheResearchersOwn();
    void staffRequestsAreCarriedOutAndRecorded();
    void cancelledMatmulAnswersLateTilesStale();
    void cancelledGraphJobAnswersLateReplicasStale();
    void unfetchedJobsArePurgedOnceTheirRetentionPassed();
    void aJobNothingCanComputeIsSaidToWait();
    void aGraphTaskNoVolunteerHasTheMemoryForWaits();
};

void TestJobControl::researcherCancelsOnlyItsOwnRunningJobs() {
    Rig rig;
    rig.cancel("j-theirs", 1);
    rig.cancel("j-nothing", 2);
    rig.cancel("j-done", 3);
    QCOMPARE(rig.errorCodeOf(1), std::string("not_found"));
    QCOMPARE(rig.errorCodeOf(2), std::string("not_found"));
    QCOMPARE(rig.errorCodeOf(3), std::string("invalid_input"));
    QVERIFY(rig.matmul.cancelled.empty());
    rig.cancel("j-mine", 4);
    QCOMPARE(rig.matmul.cancelled.size(), std::size_t{1});
    QCOMPARE(rig.matmul.cancelled[0].first, std::string("j-mine"));
    QCOMPARE(rig.matmul.cancelled[0].second, std::string("its researcher"));
    const auto replies = rig.link->sentOfType("cancelled");
    QCOMPARE(replies.size(), std::size_t{1});
    QCOMPARE(replies[0].control.at("id").as_int64(), std::int64_t{4});
    QCOMPARE(replies[0].control.at("state").as_string(), "cancelled");
    // A cancelled job (as the kind records it) is answered again, not cancelled twice.
    QVERIFY(rig.node.store.setJobState("j-mine", JobState::Cancelled, 40));
    rig.cancel("j-mine", 5);
    QCOMPARE(rig.matmul.cancelled.size(), std::size_t{1});
    QCOMPARE(rig.link->count("cancelled"), std::size_t{2});
}

void TestJobControl::listJobsShowsOnlyTheResearchersOwn() {
    Rig rig;
    rig.desk.onMessage(*rig.researcher, net::Message{{{"type", "list_jobs"}, {"id", 9}}, {}});
    const auto lists = rig.link->sentOfType("job_list");
    QCOMPARE(lists.size(), std::size_t{1});
    const auto& jobs = lists[0].control.at("jobs").as_array();
    QCOMPARE(jobs.size(), std::size_t{2});
    QCOMPARE(jobs[0].at("job").as_string(), "j-done"); // newest first
    QCOMPARE(jobs[1].at("job").as_string(), "j-mine");
    QCOMPARE(jobs[1].at("state").as_string(), "running");
    QCOMPARE(jobs[1].at("kind").as_string(), "matmul");
}

void TestJobControl::staffRequestsAreCarriedOutAndRecorded() {
    Rig rig;
    Database& db = rig.node.store.database();
    const auto cancel = requestJobAction(db, "j-theirs", JobAction::Cancel, 50);
    const auto purgeRunning = requestJobAction(db, "j-mine", JobAction::Purge, 50);
    const auto purge = requestJobAction(db, "j-done", JobAction::Purge, 50);
    const auto unknown = requestJobAction(db, "j-nothing", JobAction::Cancel, 50);
    QVERIFY(cancel && purgeRunning && purge && unknown);
    QVERIFY(!jobRequestOutcome(db, *cancel));
    rig.desk.checkStaffRequests();
    QCOMPARE(jobRequestOutcome(db, *cancel).value_or("?"), std::string("ok"));
    QCOMPARE(rig.matmul.cancelled.size(), std::size_t{1});
    QCOMPARE(rig.matmul.cancelled[0].second, std::string("lab staff"));
    QVERIFY(jobRequestOutcome(db, *purgeRunning).value_or("ok").find("cancel it first") !=
            std::string::npos);
    QCOMPARE(jobRequestOutcome(db, *purge).value_or("?"), std::string("ok"));
    QCOMPARE(rig.matmul.purged, std::vector<std::string>{"j-done"});
    QVERIFY(jobRequestOutcome(db, *unknown).value_or("ok").find("no job") != std::string::npos);
    QVERIFY(pendingJobRequests(db).empty());
    // The rows of a purged job go, children first.
    QVERIFY(purgeJobRows(db, "matmul", "j-done"));
    QCOMPARE(queryInt(rig.node.store, "SELECT count(*) FROM jobs WHERE id = 'j-done'"),
             std::int64_t{0});
}

void TestJobControl::cancelledMatmulAnswersLateTilesStale() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& volunteer = cluster.connectVolunteer(2, false);
    const core::Tensor a = goblin::testing::randomTensor(core::DType::F32, {6, 5}, 11);
    const core::Tensor b = goblin::testing::randomTensor(core::DType::F32, {5, 4}, 12);
    cluster.fromResearcher(net::Message{
        boost::json::object{{"type", "submit_matmul"}, {"id", 5}, {"tile", {3, 2}}, {"tensors", 2}},
        {std::make_shared<const core::Tensor>(a), std::make_shared<const core::Tensor>(b)}});
    QVERIFY(node.waitUntil([&] { return volunteer.link->count("task") == 2; }));
    const std::string job(
        researcher->sentOfType("job_accepted").at(0).control.at("job").as_string());
    QVERIFY(blobCount(node) > 0);
    cluster.fromResearcher(net::Message{{{"type", "cancel"}, {"id", 6}, {"job", job}}, {}});
    QCOMPARE(researcher->count("cancelled"), std::size_t{1});
    QCOMPARE(stateOf(node.store, "jobs", job), std::string("cancelled"));
    const auto failed = researcher->sentOfType("job_failed");
    QCOMPARE(failed.size(), std::size_t{1});
    QCOMPARE(failed[0].control.at("code").as_string(), "cancelled");
    QCOMPARE(blobCount(node), std::size_t{0});
    QVERIFY(node.logged("cancelled by its researcher"));
    cluster.answer(volunteer, honestTile);
    QVERIFY(node.waitUntil([&] { return volunteer.verdicts().size() == 2; }));
    QCOMPARE(volunteer.verdicts(), (std::vector<std::string>{"stale", "stale"}));
    node.poll();
    QCOMPARE(volunteer.link->count("task"), std::size_t{2}); // no tile of it is handed out again
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM results"), std::int64_t{0});
    QVERIFY(!quarantined(node, volunteer.id()));
    QVERIFY(!volunteer.link->closed());
    // A fetch says cancelled: the status, then job_failed.
    cluster.fromResearcher(net::Message{{{"type", "fetch"}, {"id", 7}, {"job", job}}, {}});
    const auto statuses = researcher->sentOfType("job_status");
    QCOMPARE(statuses.size(), std::size_t{1});
    QCOMPARE(statuses[0].control.at("state").as_string(), "cancelled");
    QCOMPARE(researcher->count("job_failed"), std::size_t{2});
    QVERIFY(researcher->count("job_done") == 0);
}

void TestJobControl::cancelledGraphJobAnswersLateReplicasStale() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& one = cluster.connectVolunteer(2, true);
    auto& two = cluster.connectVolunteer(2, true, "cpu-eigen", "10.0.0.2");
    const core::Tensor x =
        goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 3);
    cluster.fromResearcher(submitRelu(x));
    QVERIFY(node.waitUntil([&] { return one.link->count("task") + two.link->count("task") >= 2; }));
    const std::string job(
        researcher->sentOfType("job_accepted").at(0).control.at("job").as_string());
    cluster.fromResearcher(net::Message{{{"type", "cancel"}, {"id", 8}, {"job", job}}, {}});
    QCOMPARE(researcher->count("cancelled"), std::size_t{1});
    QCOMPARE(stateOf(node.store, "graph_jobs", job), std::string("cancelled"));
    QCOMPARE(blobCount(node), std::size_t{0});
    const std::size_t sent = one.link->count("task") + two.link->count("task");
    cluster.answer(one, honestRelu);
    cluster.answer(two, honestRelu);
    QVERIFY(node.waitUntil([&] { return one.verdicts().size() + two.verdicts().size() == sent; }));
    for (const auto* volunteer : {&one, &two})
        for (const std::string& verdict : volunteer->verdicts())
            QCOMPARE(verdict, std::string("stale"));
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results"), std::int64_t{0});
    QCOMPARE(researcher->count("job_done"), std::size_t{0});
    QCOMPARE(researcher->sentOfType("job_failed").at(0).control.at("code").as_string(),
             "cancelled");
    cluster.fromResearcher(net::Message{{{"type", "fetch"}, {"id", 9}, {"job", job}}, {}});
    QCOMPARE(researcher->sentOfType("job_status").at(0).control.at("state").as_string(),
             "cancelled");
}

void TestJobControl::unfetchedJobsArePurgedOnceTheirRetentionPassed() {
    Rig rig;
    rig.desk.control().setRetention(3600);
    insertJob(rig.node.store, "j-old", 1, "done", 50, 100);
    insertJob(rig.node.store, "j-failed", 1, "failed", 60, 2000);
    insertJob(rig.node.store, "j-gone", 1, "released", 70, 100);
    rig.node.now = 3000; // j-old finished 2,900 s ago: within the retention
    rig.desk.checkStaffRequests();
    QVERIFY(rig.matmul.purged.empty());
    rig.node.now = 3701; // past it for j-old only
    rig.desk.control().purgeExpired(true);
    QCOMPARE(rig.matmul.purged, std::vector<std::string>{"j-old"});
    QVERIFY(rig.node.logged("job j-old was not fetched within --retain-hours"));
    QVERIFY(purgeJobRows(rig.node.store.database(), "matmul", "j-old")); // as the kind does
    rig.node.now = 5601; // and now for j-failed; a released or running job is never purged
    rig.desk.control().purgeExpired(true);
    QCOMPARE(rig.matmul.purged, (std::vector<std::string>{"j-old", "j-failed"}));
}

void TestJobControl::aJobNothingCanComputeIsSaidToWait() {
    Rig rig;
    rig.desk.watch("j-mine", rig.researcher->id);
    rig.desk.checkStaffRequests();
    auto progress = rig.link->sentOfType("progress");
    QCOMPARE(progress.size(), std::size_t{1});
    QCOMPARE(progress[0].control.at("waiting").as_string(),
             "no volunteer is connected to compute it");
    QVERIFY(rig.node.logged("job j-mine waits: no volunteer is connected"));
    rig.desk.checkStaffRequests(); // said once, not every check
    QCOMPARE(rig.link->count("progress"), std::size_t{1});
    auto volunteerLink = std::make_shared<FakePeerLink>();
    Peer& volunteer = rig.peers.add(9, volunteerLink, PeerRole::Volunteer);
    volunteer.ready = true;
    volunteer.volunteer.volunteerId = "v-1";
    volunteer.volunteer.dtypes = {"f64"}; // the job multiplies f32 matrices
    rig.desk.checkStaffRequests();
    progress = rig.link->sentOfType("progress");
    QCOMPARE(progress.size(), std::size_t{2});
    QCOMPARE(progress[1].control.at("waiting").as_string(),
             "no connected volunteer computes f32 products");
    volunteer.volunteer.dtypes = {"f32", "f64"};
    rig.desk.checkStaffRequests();
    progress = rig.link->sentOfType("progress");
    QCOMPARE(progress.size(), std::size_t{3});
    QVERIFY(!progress[2].control.contains("waiting"));
    QVERIFY(rig.node.logged("job j-mine computes again"));
}

void TestJobControl::aGraphTaskNoVolunteerHasTheMemoryForWaits() {
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    net::Message hello = volunteerHello(2, true);
    // Each chunk's x and relu(x) are 48 bytes: the volunteer could hold either value, not both
    // (a value bigger than every volunteer would be refused at submit instead).
    hello.control["capabilities"].as_object()["memory_bytes"] = 48;
    auto link = std::make_shared<FakePeerLink>();
    cluster.coordinator.onConnected(50, link, PeerRole::Volunteer);
    cluster.coordinator.onMessage(50, hello);
    QCOMPARE(link->count("welcome"), std::size_t{1});
    cluster.fromResearcher(
        submitRelu(goblin::testing::randomTensor(core::DType::F32, {kReluRows, kReluCols}, 3)));
    QVERIFY(node.waitUntil([&] { return researcher->count("job_accepted") == 1; }));
    const std::string job(
        researcher->sentOfType("job_accepted").at(0).control.at("job").as_string());
    // The coordinator's staff check (every two seconds) says so.
    QVERIFY(node.waitUntil([&] {
        const auto sent = researcher->sentOfType("progress");
        return !sent.empty() && sent.back().control.contains("waiting");
    }));
    const auto progress = researcher->sentOfType("progress");
    QVERIFY(std::string(progress.back().control.at("waiting").as_string()).find("memory") !=
            std::string::npos);
    QVERIFY(node.logged("job " + job + " waits: no connected volunteer lends the memory"));
    QCOMPARE(link->count("task"), std::size_t{0});
}

QTEST_APPLESS_MAIN(TestJobControl)
#include "test_job_control.moc"
