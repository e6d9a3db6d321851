// The terminal idle probe on a fake utmp and /dev: the idle time is that of the most recently
// used terminal of a live user session; dead sessions, X logins (":0"), other record types and
// lines that would leave /dev are ignored; no session at all is "idle for ever".
#include <QtTest>

#include <cmath>

#include "tty_idle.hpp"
#include "utmp_fixture.hpp"

using namespace goblin::volunteer;

class TestTtyIdle : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void mostRecentTerminalCounts();
    void ignoresWhatIsNoLiveTerminal();
    void nobodyLoggedInIsIdle();
};

namespace {

TtyIdleSources sourcesOf(const testing::UtmpFixture& fixture, double now) {
    return TtyIdleSources{fixture.utmp(), fixture.dev(), [now] { return now; }};
}

} // namespace

void TestTtyIdle::mostRecentTerminalCounts() {
    testing::UtmpFixture fixture;
    fixture.addSession("pts/3", 1000);
    fixture.addSession("tty2", 1250);
    const auto idle = ttyIdle(sourcesOf(fixture, 1300));
    QVERIFY(idle);
    QCOMPARE(idle->sessions, 2);
    QCOMPARE(idle->seconds, 50.0);
    QCOMPARE(describe(*idle), std::string("terminal input of 2 logged-in session(s) (utmp)"));
}

void TestTtyIdle::ignoresWhatIsNoLiveTerminal() {
    testing::UtmpFixture fixture;
    fixture.addSession("pts/1", 1000);
    fixture.addRecord(USER_PROCESS, "pts/9", 0); // its process is gone
    fixture.addTerminal("pts/9", 1290);
    fixture.addRecord(USER_PROCESS, ":0"); // an X login names no terminal
    fixture.addRecord(LOGIN_PROCESS, "tty1");
    fixture.addTerminal("tty1", 1295);
    fixture.addRecord(USER_PROCESS, "../etc"); // never outside /dev
    fixture.addRecord(USER_PROCESS, "pts/5");  // no such device
    const auto idle = ttyIdle(sourcesOf(fixture, 1300));
    QVERIFY(idle);
    QCOMPARE(idle->sessions, 1);
    QCOMPARE(idle->seconds, 300.0);
}

void TestTtyIdle::nobodyLoggedInIsIdle() {
    testing::UtmpFixture fixture;
    const auto missing = ttyIdle(sourcesOf(fixture, 1300)); // no utmp file at all
    QVERIFY(missing);
    QCOMPARE(missing->sessions, 0);
    QVERIFY(std::isinf(missing->seconds));
    fixture.addRecord(LOGIN_PROCESS, "tty1");
    const auto onlyGetty = ttyIdle(sourcesOf(fixture, 1300));
    QVERIFY(onlyGetty && std::isinf(onlyGetty->seconds));
    QCOMPARE(describe(*onlyGetty), std::string("no user logged in on a terminal (utmp)"));
}

QTEST_APPLESS_MAIN(TestTtyIdle)
#include "test_tty_idle.moc"
