// The level of node log lines: errors for what the node could not do, warnings for what staff
// should look at, info for the rest.
#include <QtTest/QtTest>

#include "log_level.hpp"

using namespace goblin::labnode;

class TestLogLevel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void linesGetTheirLevel();
};

void TestLogLevel::linesGetTheirLevel() {
    QCOMPARE(logLevelOf("job j-1 accepted: matmul 4x4 · 4x4 f32 in 1 tile(s) of 4x4"),
             LogLevel::Info);
    QCOMPARE(logLevelOf("volunteer v-1 connected from 127.0.0.1 (cpu-eigen, 2 slot(s))"),
             LogLevel::Info);
    QCOMPARE(logLevelOf("volunteer v-1 disconnected (internal: peer closed the connection (1000)); "
                        "0 task(s) back in the queue"),
             LogLevel::Info);
    QCOMPARE(logLevelOf("task 3 attempt 1 from volunteer v-1 REJECTED: over the bound"),
             LogLevel::Warning);
    QCOMPARE(logLevelOf("volunteer v-2 banned by lab staff: lies"), LogLevel::Warning);
    QCOMPARE(logLevelOf("graph job g-1 failed: invalid_input: integer division by zero"),
             LogLevel::Warning);
    QCOMPARE(logLevelOf("job j-1 waits: no volunteer is connected to compute it"),
             LogLevel::Warning);
    QCOMPARE(logLevelOf("could not record the verdict of task 4 (disk I/O error)"),
             LogLevel::Error);
    QCOMPARE(logLevelOf("job j-2 cannot resume (its blobs are missing); marked failed"),
             LogLevel::Error);
    QCOMPARE(logLevelName(LogLevel::Warning), std::string_view("warning"));
    QCOMPARE(logLevelName(LogLevel::Info), std::string_view("info"));
}

QTEST_APPLESS_MAIN(TestLogLevel)
#include "test_log_level.moc"
