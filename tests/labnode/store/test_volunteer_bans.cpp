// Tests of volunteer_bans on a real SQLite file: a ban needs a registered volunteer, is refused at
// hello (volunteers.banned), records time and reason; unban lifts it and only the ban's own
// quarantine.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <string>

#include "store/node_store.hpp"
#include "store/trust_store.hpp"
#include "store/volunteer_bans.hpp"

using goblin::ErrorCode;
using goblin::labnode::activeBans;
using goblin::labnode::banVolunteer;
using goblin::labnode::kBanReasonPrefix;
using goblin::labnode::loadTrust;
using goblin::labnode::NodeStore;
using goblin::labnode::quarantineVolunteer;
using goblin::labnode::unbanVolunteer;
using goblin::labnode::volunteerDetail;

class TestVolunteerBans : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void banRecordsTimeAndReasonAndRefusesAtHello() {
        QTemporaryDir dir;
        NodeStore store(dir.filePath("node.db").toStdString());
        QVERIFY(store.addVolunteer("v-1", "hash", 10.0));
        auto unknown = banVolunteer(store.database(), "v-2", "x", 20.0);
        QVERIFY(!unknown.has_value());
        QCOMPARE(unknown.error().code, ErrorCode::NotFound);

        QVERIFY(banVolunteer(store.database(), "v-1", "cheats", 20.0));
        QVERIFY(store.volunteer("v-1")->banned);
        const auto bans = activeBans(store.database());
        QCOMPARE(bans.size(), std::size_t{1});
        QCOMPARE(bans[0].volunteerId, std::string("v-1"));
        QCOMPARE(bans[0].reason, std::string("cheats"));
        QCOMPARE(bans[0].bannedAt, 20.0);
        const auto detail = volunteerDetail(store.database(), "v-1");
        QVERIFY(detail && detail->ban);
        QCOMPARE(detail->ban->reason, std::string("cheats"));
    }

    void unbanLiftsTheBanAndOnlyItsOwnQuarantine() {
        QTemporaryDir dir;
        NodeStore store(dir.filePath("node.db").toStdString());
        QVERIFY(store.addVolunteer("v-ban", "hash", 10.0));
        QVERIFY(store.addVolunteer("v-caught", "hash", 10.0));
        for (const char* id : {"v-ban", "v-caught"})
            QVERIFY(banVolunteer(store.database(), id, "staff said so", 20.0));
        QVERIFY(quarantineVolunteer(store.database(), "v-ban",
                                    std::string(kBanReasonPrefix) + "staff said so", 21.0));
        QVERIFY(quarantineVolunteer(store.database(), "v-caught", "graph task 3 rejected", 21.0));

        for (const char* id : {"v-ban", "v-caught"})
            QVERIFY(unbanVolunteer(store.database(), id, 30.0));
        QVERIFY(activeBans(store.database()).empty());
        QVERIFY(!store.volunteer("v-ban")->banned);
        QVERIFY(!loadTrust(store.database(), "v-ban").quarantinedAt);
        QVERIFY(loadTrust(store.database(), "v-caught").quarantinedAt); // for good
        const auto detail = volunteerDetail(store.database(), "v-ban");
        QVERIFY(detail && !detail->ban);
        QCOMPARE(detail->banLiftedAt, 30.0);

        auto again = unbanVolunteer(store.database(), "v-ban", 40.0);
        QVERIFY(!again.has_value());
        QCOMPARE(again.error().code, ErrorCode::NotFound);
    }
};

QTEST_APPLESS_MAIN(TestVolunteerBans)
#include "test_volunteer_bans.moc"
