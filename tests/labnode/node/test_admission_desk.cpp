// Tests of the AdmissionDesk with fake peers on an in-memory database: the first message must be a
// hello of a protocol and catalog the node speaks; researchers by token (hash stored), volunteers
// registered with an id and a secret sent once, returning volunteers checked, banned and
// quarantined ones refused, new identities rate-limited per address, and under the approved policy
// a volunteer idle until lab staff approve it.
#include <QtTest/QtTest>

#include "labnode/node_harness.hpp"
#include "node/admission_desk.hpp"
#include "node/secrets.hpp"
#include "store/admission_store.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig : RoleRig {
    explicit Rig(AdmissionSettings settings = {}) : desk{context, peers, trust, settings} {}
    TrustBook trust{context, TrustSettings{}};
    AdmissionDesk desk;

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
    void quarantinedVolunteerIsRefused();
    void registrationsAreLimitedPerAddress();
    void approvedPolicyKeepsNewVolunteersIdle();
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
                 std::string("this node speaks protocols 1 to 10 with catalogs 1 to 3"));
    }
    auto [peer, link] = rig.connect(20, PeerRole::Researcher);
    auto hello = researcherHello("tok");
    hello.control["protocol"] = net::kProtocolVersion + 1;
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
    QVERIFY(rig.node.logged("volunteer " + id + " connected from 127.0.0.1"));
    QCOMPARE(peer->volunteer.address, std::string("127.0.0.1"));

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

void TestAdmissionDesk::quarantinedVolunteerIsRefused() {
    Rig rig;
    auto [peer, link] = rig.connect(1, PeerRole::Volunteer);
    QVERIFY(rig.desk.onHello(*peer, volunteerHello(1, true)));
    const auto welcome = link->sentOfType("welcome").at(0).control;
    const std::string id(welcome.at("volunteer").as_string());
    rig.trust.quarantine(id, "graph task 7 attempt 1 rejected (node-audit): differs");
    QVERIFY(queryInt(rig.node.store, "SELECT count(*) FROM volunteer_trust WHERE "
                                     "quarantined_at IS NOT NULL AND volunteer_id = '" +
                                         id + "'") == 1);
    auto returning = volunteerHello(1, true);
    returning.control["identity"] =
        boost::json::object{{"volunteer", id}, {"secret", welcome.at("secret")}};
    auto [again, againLink] = rig.connect(2, PeerRole::Volunteer);
    QVERIFY(!rig.desk.onHello(*again, returning));
    QCOMPARE(againLink->closed()->code, ErrorCode::Banned);
    QVERIFY(againLink->closed()->message.find("quarantined") != std::string::npos);
    QVERIFY(againLink->closed()->message.find("graph task 7") != std::string::npos);
}

void TestAdmissionDesk::registrationsAreLimitedPerAddress() {
    AdmissionSettings settings;
    settings.registrationsPerHour = 3;
    Rig rig(settings);
    std::uint64_t next = 1;
    auto registerFrom = [&](const std::string& address) {
        auto [peer, link] = rig.connect(next++, PeerRole::Volunteer);
        link->setAddress(address);
        const bool admitted = rig.desk.onHello(*peer, volunteerHello(1, false));
        return std::pair{admitted, link};
    };
    for (int i = 0; i < 3; ++i)
        QVERIFY(registerFrom("10.0.0.1").first);
    const auto [refused, refusedLink] = registerFrom("10.0.0.1");
    QVERIFY(!refused);
    QCOMPARE(refusedLink->closed()->code, ErrorCode::LimitExceeded);
    QVERIFY(registerFrom("10.0.0.2").first); // another address has its own budget
    // A returning identity is not a registration: it is admitted from the full address.
    auto [first, firstLink] = rig.connect(next++, PeerRole::Volunteer);
    firstLink->setAddress("10.0.0.9");
    QVERIFY(rig.desk.onHello(*first, volunteerHello(1, false)));
    const auto welcome = firstLink->sentOfType("welcome").at(0).control;
    auto returning = volunteerHello(1, false);
    returning.control["identity"] = boost::json::object{{"volunteer", welcome.at("volunteer")},
                                                        {"secret", welcome.at("secret")}};
    auto [back, backLink] = rig.connect(next++, PeerRole::Volunteer);
    backLink->setAddress("10.0.0.1");
    QVERIFY(rig.desk.onHello(*back, returning));
    // An hour later the address may register again (the clock is the harness's).
    rig.node.now += 3601;
    QVERIFY(registerFrom("10.0.0.1").first);
}

void TestAdmissionDesk::approvedPolicyKeepsNewVolunteersIdle() {
    AdmissionSettings settings;
    settings.policy = VolunteerPolicy::Approved;
    Rig rig(settings);
    auto [peer, link] = rig.connect(1, PeerRole::Volunteer);
    QVERIFY(rig.desk.onHello(*peer, volunteerHello(1, false)));
    const std::string id(link->sentOfType("welcome").at(0).control.at("volunteer").as_string());
    QVERIFY(!peer->volunteer.approved);
    QVERIFY(rig.peers.volunteers().empty()); // connected, but given no work
    QVERIFY(rig.node.logged("goblin-labnode volunteer approve " + id));
    QVERIFY(!rig.desk.recheckApprovals());
    QVERIFY(approveVolunteer(rig.node.store.database(), id, rig.node.now).has_value());
    QVERIFY(rig.desk.recheckApprovals());
    QCOMPARE(rig.peers.volunteers().size(), std::size_t{1});
    QVERIFY(!approveVolunteer(rig.node.store.database(), "v-unknown", rig.node.now));
}

QTEST_APPLESS_MAIN(TestAdmissionDesk)
#include "test_admission_desk.moc"
