// Tests of the PeerRegistry with fake links: send and close by id (an unknown id is a no-op),
// ready volunteers only, the smallest lent memory, watchers that go with their connection.
#include <QtTest/QtTest>

#include "labnode/node_harness.hpp"
#include "node/peer_registry.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

class TestPeerRegistry : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void sendAndCloseById();
    void volunteersAreTheReadyOnes();
    void watchersGoWithTheirConnection();
};

void TestPeerRegistry::sendAndCloseById() {
    PeerRegistry peers;
    auto link = std::make_shared<FakePeerLink>();
    peers.add(3, link, PeerRole::Researcher);
    peers.send(3, control({{"type", "progress"}}));
    peers.send(99, control({{"type", "progress"}})); // gone: nothing happens
    QCOMPARE(link->count("progress"), std::size_t{1});
    peers.close(99, Error{ErrorCode::Internal, "x"});
    QVERIFY(!link->closed());
    peers.closeAll(Error{ErrorCode::Internal, "shutting down"});
    QCOMPARE(link->closed()->message, std::string("shutting down"));
    QVERIFY(peers.find(3) != nullptr);
    peers.remove(3);
    QVERIFY(peers.find(3) == nullptr);
}

void TestPeerRegistry::volunteersAreTheReadyOnes() {
    PeerRegistry peers;
    for (std::uint64_t id = 1; id <= 4; ++id) {
        Peer& peer = peers.add(id, std::make_shared<FakePeerLink>(),
                               id == 4 ? PeerRole::Researcher : PeerRole::Volunteer);
        peer.ready = id != 2;
        peer.volunteer.memoryBytes = id == 1 ? 0 : std::int64_t(id) << 20;
    }
    const auto ready = peers.volunteers();
    QCOMPARE(ready.size(), std::size_t{2});
    QCOMPARE(ready[0]->id, std::uint64_t{1});
    QCOMPARE(ready[1]->id, std::uint64_t{3});
    std::int64_t smallest = -1;
    QCOMPARE(peers.readyVolunteerCount(&smallest), 2);
    QCOMPARE(smallest, std::int64_t{3} << 20); // 0 means "not said" and does not count
    QCOMPARE(peers.readyResearcherCount(), 1);
    peers.add(5, std::make_shared<FakePeerLink>(), PeerRole::Researcher); // hello not yet accepted
    QCOMPARE(peers.readyResearcherCount(), 1);
}

void TestPeerRegistry::watchersGoWithTheirConnection() {
    PeerRegistry peers;
    peers.add(1, std::make_shared<FakePeerLink>(), PeerRole::Researcher);
    peers.add(2, std::make_shared<FakePeerLink>(), PeerRole::Researcher);
    peers.watch("j-1", 1);
    peers.watch("j-1", 2);
    peers.watch("j-1", 7); // not connected: not a watcher
    peers.watch("g-1", 2);
    QCOMPARE(peers.watchers("j-1"), (std::vector<std::uint64_t>{1, 2}));
    peers.remove(2);
    QCOMPARE(peers.watchers("j-1"), (std::vector<std::uint64_t>{1}));
    QVERIFY(peers.watchers("g-1").empty());
    peers.unwatch("j-1", 1);
    QVERIFY(peers.watchers("j-1").empty());
    peers.watch("j-2", 1);
    QCOMPARE(peers.takeWatchers("j-2"), (std::vector<std::uint64_t>{1}));
    QVERIFY(peers.takeWatchers("j-2").empty());
}

QTEST_APPLESS_MAIN(TestPeerRegistry)
#include "test_peer_registry.moc"
