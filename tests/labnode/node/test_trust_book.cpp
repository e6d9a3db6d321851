// Tests of the TrustBook on an in-memory database: new identities are audited every time until
// they passed their probation, the rate then falls with history to the floor and never below,
// shared addresses and expiries raise it, any rejection quarantines for good (durably), and a
// quarantine reaches its listeners once.
#include <QtTest/QtTest>

#include "labnode/node_harness.hpp"
#include "node/trust_book.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

VerdictRecord verdict(const std::string& volunteer, bool accepted, const std::string& method) {
    VerdictRecord record;
    record.kind = "graph";
    record.task = 7;
    record.attempt = 2;
    record.volunteerId = volunteer;
    record.accepted = accepted;
    record.method = method;
    record.reason = accepted ? "" : "outputs differ";
    return record;
}

TrustSettings settings() {
    TrustSettings chosen;
    chosen.probationAudits = 4;
    chosen.auditFloor = 0.1;
    chosen.sharedAddressRate = 0.5;
    chosen.expiryPenalty = 2;
    return chosen;
}

} // namespace

class TestTrustBook : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void probationThenHistoryThenFloor() {
        RoleRig rig;
        TrustBook trust(rig.context, settings());
        QCOMPARE(trust.auditRate({"v-new"}, false), 1.0);
        for (int i = 0; i < 3; ++i)
            trust.onVerdict(verdict("v-new", true, "node-audit"));
        QCOMPARE(trust.auditRate({"v-new"}, false), 1.0); // 3 of 4 audits: still on probation
        trust.onVerdict(verdict("v-new", true, "node-audit"));
        QCOMPARE(trust.auditRate({"v-new"}, false), 1.0); // 4/4
        for (int i = 0; i < 4; ++i)
            trust.onVerdict(verdict("v-new", true, "node-tiebreak"));
        QCOMPARE(trust.auditRate({"v-new"}, false), 0.5); // 4/8
        for (int i = 0; i < 100; ++i)
            trust.onVerdict(verdict("v-new", true, "node-audit"));
        QCOMPARE(trust.auditRate({"v-new"}, false), 0.1); // the floor, never below
        // Agreement between volunteers is not history: only the node's own checks are.
        for (int i = 0; i < 100; ++i)
            trust.onVerdict(verdict("v-pair", true, "replica-agreement"));
        QCOMPARE(trust.auditRate({"v-pair"}, false), 1.0);
        // A task is audited at the rate of its least trusted volunteer, and more on one address.
        QCOMPARE(trust.auditRate({"v-new", "v-pair"}, false), 1.0);
        QCOMPARE(trust.auditRate({"v-new"}, true), 0.5);
        // The history survives a restart of the node (same database).
        TrustBook again(rig.context, settings());
        QCOMPARE(again.auditRate({"v-new"}, false), 0.1);
    }

    void expiriesCostHistory() {
        RoleRig rig;
        TrustBook trust(rig.context, settings());
        for (int i = 0; i < 8; ++i)
            trust.onVerdict(verdict("v-slow", true, "node-audit"));
        QCOMPARE(trust.auditRate({"v-slow"}, false), 0.5);
        trust.onExpired("v-slow");
        trust.onExpired("v-slow");
        QCOMPARE(trust.auditRate({"v-slow"}, false), 1.0); // 8 − 2·2 = 4 audits of history
    }

    void anyRejectionQuarantinesForGood() {
        RoleRig rig;
        TrustBook trust(rig.context, settings());
        std::vector<std::string> told;
        trust.addQuarantineListener(
            [&](const std::string& id, const std::string&) { told.push_back(id); });
        trust.onVerdict(verdict("v-liar", false, "node-audit"));
        QVERIFY(trust.isQuarantined("v-liar"));
        QVERIFY(trust.quarantineReason("v-liar").find("graph task 7 attempt 2") !=
                std::string::npos);
        trust.onVerdict(verdict("v-liar", false, "freivalds-f64")); // once is enough
        QVERIFY(rig.node.waitUntil([&] { return !told.empty(); }));
        rig.node.poll();
        QCOMPARE(told, std::vector<std::string>{"v-liar"});
        QCOMPARE(trust.auditRate({"v-liar"}, false), 1.0);
        TrustBook again(rig.context, settings());
        QVERIFY(again.isQuarantined("v-liar"));
        QVERIFY(!again.isQuarantined("v-honest"));
        // A replica dropped because its volunteer was already quarantined changes nothing.
        trust.onVerdict(verdict("v-other", false, "quarantine"));
        QVERIFY(!trust.isQuarantined("v-other"));
    }

    void auditChoiceFollowsTheRate() {
        RoleRig rig;
        TrustSettings noProbation = settings();
        noProbation.probationAudits = 0;
        noProbation.auditFloor = 0.25;
        TrustBook trust(rig.context, noProbation);
        int audited = 0;
        for (int i = 0; i < 4000; ++i)
            audited += trust.chooseAudit({"v-a", "v-b"}, false) ? 1 : 0;
        // 4000 draws at 0.25: mean 1000, standard deviation about 27.
        QVERIFY2(audited > 800 && audited < 1200, std::to_string(audited).c_str());
        noProbation.auditFloor = 0.0;
        TrustBook none(rig.context, noProbation);
        for (int i = 0; i < 100; ++i)
            QVERIFY(!none.chooseAudit({"v-a"}, false));
    }
};

QTEST_APPLESS_MAIN(TestTrustBook)
#include "test_trust_book.moc"
