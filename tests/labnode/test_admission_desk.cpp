// Tests of the AdmissionDesk with fake peers on an in-memory database: the first message must be a
// hello of a protocol and catalog the node speaks; researchers by token (hash stored), volunteers
// registered with an id and a secret sent once, returning volunteers checked, banned ones refused.
#include <QtTest/QtTest>

#include "admission_desk.hpp"
#include "node_harness.hpp"
#include "secrets.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig : RoleRig {
    AdmissionDesk desk{context, peers, net::Limits{}};

    std::pair<Peer*, std::shared_ptr<FakePeerLink>> connect(std::uint64_t id, PeerRole role) {
        auto link = std::make_shared<FakePeerLink>();
        return {&peers.add(id, link, role), link};
    }
};

} // namespace

class TestAdmissionDesk : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void firstMessageMustBeHello();
    void versionsOutsideTheNodesAreClosed();
    void researcherByToken();
    void volunteerRegistersThenReturns();
    void bannedVolunteerIsRefused();
};

void TestAdmissionDesk::firstMessageMustBeHello() {
    Rig rig;
    auto [peer, link] = rig.connect(1, PeerRole::Volunteer);
    QVERIFY(!rig.desk.onHello(*peer, control({{"type", "result"}, {"task", 1}})));
    QVERIFY(link->closed().has_value());
    QCOMPARE(link->closed()->code, ErrorCode::InvalidMessage);
    QVERIFY(!peer->ready);
    QVERIFY(!link->tensorsAllowed());
}

void TestAdmissionDesk::versionsOutsideTheNodesAreClosed() {
    Rig rig;
    for (int catalog : {0, 4}) {
        auto [peer, link] =
            rig.connect(static_cast<std::uint64_t>(10 + catalog), PeerRole::Researcher);
        QVERIFY(!rig.desk.onHello(*peer, researcherHello("tok", catalog)));
        QCOMPARE(link->closed()->code, ErrorCode::VersionMismatch);
        QCOMPARE(link->closed()->message,
                 std::string("this node speaks protocol 1 with catalogs 1 to 3"));
    }
    auto [peer, link] = rig.connect(20, PeerRole::Researcher);
    auto hello = researcherHello("tok");
    hello.control["protocol"] = 2;
    QVERIFY(!rig.desk.onHello(*peer, hello));
    QCOMPARE(link->closed()->code, ErrorCode::VersionMismatch);
}

void TestAdmissionDesk::researcherByToken() {
    Rig rig;
    const auto researcher =
        rig.node.store.addResearcher("ada@lab.example", hashSecret("tok-right"));
    QVERIFY(researcher.has_value());
    auto [wrong, wrongLink] = rig.connect(1, PeerRole::Researcher);
    QVERIFY(!rig.desk.onHello(*wrong, researcherHello("tok-wrong")));
    QCOMPARE(wrongLink->closed()->code, ErrorCode::Unauthenticated);
    auto [empty, emptyLink] = rig.connect(2, PeerRole::Researcher);
    QVERIFY(!rig.desk.onHello(*empty, researcherHello("")));
    QCOMPARE(emptyLink->closed()->code, ErrorCode::Unauthenticated);

    auto [peer, link] = rig.connect(3, PeerRole::Researcher);
    QVERIFY(rig.desk.onHello(*peer, researcherHello("tok-right", 1)));
    QVERIFY(peer->ready);
    QCOMPARE(peer->researcherId, *researcher);
    QCOMPARE(peer->catalog, 1);
    QVERIFY(link->tensorsAllowed());
    const auto welcome = link->sentOfType("welcome");
    QCOMPARE(welcome.size(), std::size_t{1});
    QCOMPARE(welcome[0].control.at("catalog").as_int64(), std::int64_t{3});
    QVERIFY(welcome[0].control.at("limits").as_object().contains("max_tensor_bytes"));
    QVERIFY(!welcome[0].control.contains("secret"));
}

void TestAdmissionDesk::volunteerRegistersThenReturns() {
    Rig rig;
    auto [peer, link] = rig.connect(1, PeerRole::Volunteer);
    QVERIFY(rig.desk.onHello(*peer, volunteerHello(2, true, "opencl-clblast")));
    const auto welcome = link->sentOfType("welcome").at(0).control;
    const std::string id(welcome.at("volunteer").as_string());
    const std::string secret(welcome.at("secret").as_string());
    QVERIFY(id.starts_with("v-"));
    QCOMPARE(peer->volunteer.volunteerId, id);
    QCOMPARE(peer->volunteer.slots, 2);
    QCOMPARE(peer->volunteer.backend, std::string("opencl-clblast"));
    QVERIFY(peer->volunteer.graphs);
    QVERIFY(peer->volunteer.dtypes.contains("f64"));
    const auto stored = rig.node.store.volunteer(id);
    QVERIFY(stored.has_value());
    QVERIFY2(stored->secretHash != secret, "the secret is stored in clear");
    QCOMPARE(stored->secretHash, hashSecret(secret));
    QVERIFY(rig.node.logged("volunteer " + id + " connected from 127.0.0.1:5555"));

    auto returning = volunteerHello(1, false);
    returning.control["identity"] = boost::json::object{{"volunteer", id}, {"secret", secret}};
    auto [again, againLink] = rig.connect(2, PeerRole::Volunteer);
    QVERIFY(rig.desk.onHello(*again, returning));
    QCOMPARE(again->volunteer.volunteerId, id);
    QVERIFY(!again->volunteer.graphs);
    QVERIFY(!againLink->sentOfType("welcome").at(0).control.contains("secret"));

    returning.control["identity"] = boost::json::object{{"volunteer", id}, {"secret", "wrong"}};
    auto [impostor, impostorLink] = rig.connect(3, PeerRole::Volunteer);
    QVERIFY(!rig.desk.onHello(*impostor, returning));
    QCOMPARE(impostorLink->closed()->code, ErrorCode::Unauthenticated);
}

void TestAdmissionDesk::bannedVolunteerIsRefused() {
    Rig rig;
    auto [peer, link] = rig.connect(1, PeerRole::Volunteer);
    QVERIFY(rig.desk.onHello(*peer, volunteerHello(1, false)));
    const auto welcome = link->sentOfType("welcome").at(0).control;
    const std::string id(welcome.at("volunteer").as_string());
    QVERIFY(rig.node.store.database().execute("UPDATE volunteers SET banned = 1").has_value());
    auto returning = volunteerHello(1, false);
    returning.control["identity"] =
        boost::json::object{{"volunteer", id}, {"secret", welcome.at("secret")}};
    auto [again, againLink] = rig.connect(2, PeerRole::Volunteer);
    QVERIFY(!rig.desk.onHello(*again, returning));
    QCOMPARE(againLink->closed()->code, ErrorCode::Banned);
}

QTEST_APPLESS_MAIN(TestAdmissionDesk)
#include "test_admission_desk.moc"
