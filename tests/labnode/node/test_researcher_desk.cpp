// Tests of the ResearcherDesk with fake peers and fake job kinds: submissions routed by type (and
// refused below a kind's catalog), fetch and release routed by job id, unknown jobs and types,
// what the desk answers itself over real job rows (a released job's fetch, a training round's
// fetch and release), progress throttled on an injected clock, delivery to watchers once,
// failures.
#include <QtTest/QtTest>

#include "labnode/fake_kind.hpp"
#include "labnode/node_harness.hpp"
#include "node/researcher_desk.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig : RoleRig {
    ResearcherDesk desk{context, peers};
    FakeKind matmul{"matmul"};
    FakeKind graph{"graph"};
    FakeKind train{"train"};
    std::shared_ptr<FakePeerLink> link = std::make_shared<FakePeerLink>();
    Peer* researcher = nullptr;

    Rig() {
        matmul.submitName = "submit_matmul";
        matmul.prefix = "j-";
        graph.submitName = "submit_graph";
        graph.prefix = "g-";
        graph.catalog = 3;
        train.prefix = "t-";
        desk.addKind(matmul);
        desk.addKind(graph);
        desk.addKind(train);
        researcher = &peers.add(4, link, PeerRole::Researcher);
        researcher->ready = true;
        researcher->researcherId = 42;
        researcher->catalog = 3;
    }
};

void insertGraphJob(NodeStore& store, const std::string& id, std::int64_t researcher,
                    const std::string& state, const std::string& ownerJob = {},
                    std::int64_t ownerRound = 0) {
    auto insert = store.database().prepare(
        "INSERT INTO graph_jobs(id, researcher_id, tasks, request, inputs, state, created_at, "
        "finished_at, owner_job, owner_round) VALUES (?, ?, 1, '{}', '[]', ?, 10, 20, "
        "nullif(?, ''), nullif(?, 0))");
    insert.bind(1, id);
    insert.bind(2, researcher);
    insert.bind(3, state);
    insert.bind(4, ownerJob);
    insert.bind(5, ownerRound);
    QVERIFY(insert.run());
}

// The error the researcher got for request `id`, as (code, message); empty when none.
std::pair<std::string, std::string> errorFor(const FakePeerLink& link, std::int64_t id) {
    for (const auto& error : link.sentOfType("error"))
        if (error.control.at("id").as_int64() == id)
            return {std::string(error.control.at("code").as_string()),
                    std::string(error.control.at("message").as_string())};
    return {};
}

} // namespace

class TestResearcherDesk : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void submissionsGoToTheirKind();
    void catalogTooOldIsRefused();
    void fetchAndReleaseFollowTheJobId();
    void unknownJobsAndTypes();
    void theDeskAnswersWhatAJobsRowRefuses();
    void progressIsThrottledButNeverTheLast();
    void deliveryReachesEachWatcherOnce();
    void failureReachesWatchers();
};

void TestResearcherDesk::submissionsGoToTheirKind() {
    Rig rig;
    rig.desk.onMessage(*rig.researcher, control({{"type", "submit_graph"}, {"id", 7}}));
    rig.desk.onMessage(*rig.researcher, control({{"type", "submit_matmul"}, {"id", 8}}));
    QCOMPARE(rig.graph.submitted.size(), std::size_t{1});
    QCOMPARE(rig.graph.submitted[0].request.requestId, std::int64_t{7});
    QCOMPARE(rig.graph.submitted[0].request.researcherId, std::int64_t{42});
    QCOMPARE(rig.graph.submitted[0].request.peer, std::uint64_t{4});
    QCOMPARE(rig.matmul.submitted.size(), std::size_t{1});
    QCOMPARE(rig.matmul.submitted[0].request.requestId, std::int64_t{8});
}

void TestResearcherDesk::catalogTooOldIsRefused() {
    Rig rig;
    rig.researcher->catalog = 1;
    rig.desk.onMessage(*rig.researcher, control({{"type", "submit_graph"}, {"id", 7}}));
    QVERIFY(rig.graph.submitted.empty());
    const auto errors = rig.link->sentOfType("error");
    QCOMPARE(errors.size(), std::size_t{1});
    QCOMPARE(errors[0].control.at("code").as_string(), "version_mismatch");
    QCOMPARE(errors[0].control.at("id").as_int64(), std::int64_t{7});
    QVERIFY(std::string(errors[0].control.at("message").as_string()).find("catalog 3") !=
            std::string::npos);
    rig.desk.onMessage(*rig.researcher, control({{"type", "submit_matmul"}, {"id", 8}}));
    QCOMPARE(rig.matmul.submitted.size(), std::size_t{1});
}

void TestResearcherDesk::fetchAndReleaseFollowTheJobId() {
    Rig rig;
    rig.desk.onMessage(*rig.researcher, control({{"type", "fetch"}, {"id", 1}, {"job", "g-abc"}}));
    rig.desk.onMessage(*rig.researcher,
                       control({{"type", "release"}, {"id", 2}, {"job", "j-abc"}}));
    QCOMPARE(rig.graph.fetched.size(), std::size_t{1});
    QCOMPARE(rig.graph.fetched[0].jobId, std::string("g-abc"));
    QCOMPARE(rig.matmul.released.size(), std::size_t{1});
    QCOMPARE(rig.matmul.released[0].request.requestId, std::int64_t{2});
    QVERIFY(rig.matmul.fetched.empty() && rig.graph.released.empty());
}

void TestResearcherDesk::unknownJobsAndTypes() {
    Rig rig;
    rig.desk.onMessage(*rig.researcher, control({{"type", "fetch"}, {"id", 1}, {"job", "x-1"}}));
    auto errors = rig.link->sentOfType("error");
    QCOMPARE(errors.size(), std::size_t{1});
    QCOMPARE(errors[0].control.at("code").as_string(), "not_found");
    rig.desk.onMessage(*rig.researcher, control({{"type", "release"}, {"id", 2}}));
    errors = rig.link->sentOfType("error");
    QCOMPARE(errors.size(), std::size_t{2});
    QCOMPARE(errors[1].control.at("id").as_int64(), std::int64_t{2});
    QVERIFY(!rig.link->closed());
    rig.desk.onMessage(*rig.researcher, control({{"type", "result"}, {"id", 3}}));
    QVERIFY(rig.link->closed().has_value());
    QCOMPARE(rig.link->closed()->code, ErrorCode::InvalidMessage);
}

void TestResearcherDesk::theDeskAnswersWhatAJobsRowRefuses() {
    Rig rig;
    QVERIFY(rig.node.store.database().execute(
        "INSERT INTO researchers(id, email, token_hash) VALUES (42, 'a@lab.example', 'h1'), "
        "(43, 'b@lab.example', 'h2')"));
    insertGraphJob(rig.node.store, "g-released", 42, "released");
    insertGraphJob(rig.node.store, "g-retained", 42, "retained");
    insertGraphJob(rig.node.store, "g-theirs", 43, "released");
    insertGraphJob(rig.node.store, "g-round", 42, "running", "t-run", 3);
    QVERIFY(rig.node.store.database().execute(
        "INSERT INTO train_jobs(id, researcher_id, state, request, inputs, params, created_at, "
        "updated_at) VALUES ('t-kept', 42, 'retained', '{}', '[]', '[]', 10, 20)"));
    const auto ask = [&](const std::string& type, std::int64_t id, const std::string& job) {
        rig.desk.onMessage(*rig.researcher, control({{"type", type}, {"id", id}, {"job", job}}));
    };
    // A released job's fetch (or a retained one's: its result was delivered) is answered here.
    ask("fetch", 1, "g-released");
    ask("fetch", 2, "g-retained");
    for (std::int64_t id : {1, 2}) {
        const auto [code, message] = errorFor(*rig.link, id);
        QCOMPARE(code, std::string("not_found"));
        QVERIFY2(message.find("was released") != std::string::npos, message.c_str());
    }
    // A round's group is acted on only through its training job; its audit still goes through.
    ask("fetch", 3, "g-round");
    ask("release", 4, "g-round");
    for (std::int64_t id : {3, 4}) {
        const auto [code, message] = errorFor(*rig.link, id);
        QCOMPARE(code, std::string("invalid_input"));
        QVERIFY2(message.find("round 3 of training job t-run") != std::string::npos,
                 message.c_str());
    }
    QVERIFY(rig.graph.fetched.empty() && rig.graph.released.empty());
    ask("audit", 5, "g-round");
    QCOMPARE(rig.graph.audited.size(), std::size_t{1});
    // What the rows do not refuse goes to the kind: another researcher's job (which the kind
    // answers as unknown, revealing nothing), a released job's release, and the fetch of a
    // training job kept for its rounds' audits (a late catch may have trained it again).
    ask("fetch", 6, "g-theirs");
    ask("release", 7, "g-released");
    ask("fetch", 8, "t-kept");
    QCOMPARE(rig.graph.fetched.size(), std::size_t{1});
    QCOMPARE(rig.graph.fetched[0].jobId, std::string("g-theirs"));
    QCOMPARE(rig.graph.released.size(), std::size_t{1});
    QCOMPARE(rig.train.fetched.size(), std::size_t{1});
    QCOMPARE(rig.link->sentOfType("error").size(), std::size_t{4});
}

void TestResearcherDesk::progressIsThrottledButNeverTheLast() {
    Rig rig;
    rig.desk.watch("j-1", 4);
    rig.desk.reportProgress("j-1", 1, 4, ProgressPace::Throttled);
    rig.node.now += 0.05;
    rig.desk.reportProgress("j-1", 2, 4, ProgressPace::Throttled); // too soon: dropped
    rig.node.now += 0.06;
    rig.desk.reportProgress("j-1", 3, 4, ProgressPace::Throttled);
    rig.desk.reportProgress("j-1", 4, 4, ProgressPace::Throttled); // the last always goes
    auto progress = rig.link->sentOfType("progress");
    QCOMPARE(progress.size(), std::size_t{3});
    QCOMPARE(progress[0].control.at("done").as_int64(), std::int64_t{1});
    QCOMPARE(progress[1].control.at("done").as_int64(), std::int64_t{3});
    QCOMPARE(progress[2].control.at("done").as_int64(), std::int64_t{4});
    QCOMPARE(progress[2].control.at("total").as_int64(), std::int64_t{4});
    rig.desk.reportProgress("g-1", 1, 9, ProgressPace::EveryStep); // nobody watches g-1
    rig.desk.watch("g-1", 4);
    rig.desk.reportProgress("g-1", 1, 9, ProgressPace::EveryStep);
    rig.desk.reportProgress("g-1", 2, 9, ProgressPace::EveryStep);
    QCOMPARE(rig.link->count("progress"), std::size_t{5});
}

void TestResearcherDesk::deliveryReachesEachWatcherOnce() {
    Rig rig;
    auto other = std::make_shared<FakePeerLink>();
    rig.peers.add(5, other, PeerRole::Researcher).ready = true;
    rig.desk.watch("j-1", 4);
    rig.desk.watch("j-1", 5);
    rig.desk.watch("j-1", 5);
    std::vector<std::uint64_t> delivered;
    rig.desk.deliverToWatchers("j-1", [&](std::uint64_t peer) { delivered.push_back(peer); });
    QCOMPARE(delivered, (std::vector<std::uint64_t>{4, 5}));
    rig.desk.deliverToWatchers("j-1", [&](std::uint64_t peer) { delivered.push_back(peer); });
    QCOMPARE(delivered.size(), std::size_t{2});
    // A connection that left is no watcher.
    rig.desk.watch("j-2", 5);
    rig.peers.remove(5);
    rig.desk.deliverToWatchers("j-2", [&](std::uint64_t peer) { delivered.push_back(peer); });
    QCOMPARE(delivered.size(), std::size_t{2});
}

void TestResearcherDesk::failureReachesWatchers() {
    Rig rig;
    rig.desk.watch("g-1", 4);
    rig.desk.reportFailure("g-1", Error{ErrorCode::InvalidInput, "integer division by zero"});
    const auto failed = rig.link->sentOfType("job_failed");
    QCOMPARE(failed.size(), std::size_t{1});
    QCOMPARE(failed[0].control.at("job").as_string(), "g-1");
    QCOMPARE(failed[0].control.at("code").as_string(), "invalid_input");
    rig.desk.reportFailure("g-1", Error{ErrorCode::Internal, "again"});
    QCOMPARE(rig.link->count("job_failed"), std::size_t{1});
}

QTEST_APPLESS_MAIN(TestResearcherDesk)
#include "test_researcher_desk.moc"
