// The node's log levels: each role states the level of what it logs (log_level.hpp). A plain sink
// (a test's collector) still gets every line; a levelled sink gets the level the role chose.
// python/tests/test_staff_cli.py checks the levels `serve` prints for a ban and a connection.
#include <QtTest/QtTest>

#include <string>
#include <utility>
#include <vector>

#include "node/log_level.hpp"

using namespace goblin::labnode;

class TestLogLevel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void levelsReachTheSink();
    void plainSinksGetEveryLine();
    void names();
};

void TestLogLevel::levelsReachTheSink() {
    std::vector<std::pair<LogLevel, std::string>> lines;
    const NodeLog log(LevelledSink(
        [&](LogLevel level, const std::string& line) { lines.emplace_back(level, line); }));
    log("job j-1 accepted");
    log.warn("volunteer v-2 BANNED by lab staff: lies");
    log.error("could not record the verdict of task 4 (disk I/O error)");
    log.write(LogLevel::Warning, "job j-1 waits: no volunteer is connected to compute it");
    QCOMPARE(lines.size(), std::size_t{4});
    QCOMPARE(lines[0].first, LogLevel::Info);
    QCOMPARE(lines[1].first, LogLevel::Warning);
    QCOMPARE(lines[2].first, LogLevel::Error);
    QCOMPARE(lines[3].first, LogLevel::Warning);
    QCOMPARE(lines[2].second,
             std::string("could not record the verdict of task 4 (disk I/O error)"));
}

void TestLogLevel::plainSinksGetEveryLine() {
    std::vector<std::string> lines;
    const NodeLog log([&](const std::string& line) { lines.push_back(line); });
    log("a");
    log.warn("b");
    log.error("c");
    QCOMPARE(lines, (std::vector<std::string>{"a", "b", "c"}));
    NodeLog silent; // no sink: logging is a no-op, not a crash
    silent.error("nobody hears this");
}

void TestLogLevel::names() {
    QCOMPARE(logLevelName(LogLevel::Warning), std::string_view("warning"));
    QCOMPARE(logLevelName(LogLevel::Error), std::string_view("error"));
    QCOMPARE(logLevelName(LogLevel::Info), std::string_view("info"));
}

QTEST_APPLESS_MAIN(TestLogLevel)
#include "test_log_level.moc"
