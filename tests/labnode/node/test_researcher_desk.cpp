// Tests of the ResearcherDesk with fake peers and fake job kinds: submissions routed by type (and
// refused below a kind's catalog), fetch and release routed by job id, unknown jobs and types,
// progress throttled on an injected clock, delivery to watchers once, failures.
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
    std::shared_ptr<FakePeerLink> link = std::make_shared<FakePeerLink>();
    Peer* researcher = nullptr;

    Rig() {
        matmul.submitName = "submit_matmul";
        matmul.prefix = "j-";
        graph.submitName = "submit_graph";
        graph.prefix = "g-";
        graph.catalog = 3;
        desk.addKind(matmul);
        desk.addKind(graph);
        researcher = &peers.add(4, link, PeerRole::Researcher);
        researcher->ready = true;
        researcher->researcherId = 42;
        researcher->catalog = 3;
    }
};

} // namespace

class TestResearcherDesk : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void submissionsGoToTheirKind();
    void catalogTooOldIsRefused();
    void fetchAndReleaseFollowTheJobId();
    void unknownJobsAndTypes();
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
