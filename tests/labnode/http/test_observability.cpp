// Tests of the node's plain HTTP pages: Prometheus text (HELP/TYPE lines, escaped label values,
// cumulative histogram buckets), the status page's escaping, and /healthz answering 503 with its
// reason when the database cannot commit or the disk is nearly full (an injected free-space probe).
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cstdint>
#include <string>

#include "http/health_probe.hpp"
#include "http/metrics_text.hpp"
#include "http/node_http.hpp"
#include "http/node_metrics.hpp"
#include "http/status_page.hpp"
#include "store/database.hpp"
#include "store/node_store.hpp"

using namespace goblin::labnode;

namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

NodeSnapshot sampleSnapshot() {
    NodeSnapshot snapshot;
    snapshot.jobs = {{"graph", "running", "", 2}, {"matmul", "done", "", 3}};
    snapshot.verdicts = {{"matmul", "freivalds", "accepted", 12},
                         {"graph", "replica", "rejected", 1}};
    snapshot.tasksPending = 5;
    snapshot.leases = 2;
    snapshot.verificationSeconds = 0.25;
    snapshot.recentJobs = {{"job-1", "matmul", "done", 4, 4}};
    snapshot.volunteers = {{"vol-<b>", "<script>alert('x')</script>", 2, 1, 3, true}};
    snapshot.recentVerdicts = {{"matmul", 7, "vol-\"q\"", "freivalds", "accepted"}};
    return snapshot;
}

// Free-space probes for the health check.
goblin::Expected<std::uint64_t> plentyFree(const std::filesystem::path&) {
    return std::uint64_t{10} << 30;
}
goblin::Expected<std::uint64_t> almostFull(const std::filesystem::path&) {
    return std::uint64_t{3} << 20;
}

} // namespace

class TestObservability : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void familiesHaveHelpAndType();
    void labelValuesAndHelpAreEscaped();
    void histogramBucketsAreCumulative();
    void metricsCarryTheSnapshot();
    void statusPageEscapesEveryValue();
    void healthIsOkOnAWritableDatabaseWithRoom();
    void healthIs503WhenTheDatabaseCannotCommit();
    void healthIs503WhenTheDiskIsNearlyFull();
    void healthWatchesTheDatabaseDiskToo();
    void commitsAreTimedAndRequestsCounted();
};

void TestObservability::familiesHaveHelpAndType() {
    MetricsText text;
    text.family("goblin_tasks_leased", "Leases held.", MetricsText::Type::Gauge);
    text.sample("goblin_tasks_leased", 3);
    QCOMPARE(text.text(), std::string("# HELP goblin_tasks_leased Leases held.\n"
                                      "# TYPE goblin_tasks_leased gauge\n"
                                      "goblin_tasks_leased 3\n"));
    QCOMPARE(MetricsText::formatValue(0.005), std::string("0.005"));
    QCOMPARE(MetricsText::formatValue(0.1 + 0.2), std::string("0.30000000000000004"));
}

void TestObservability::labelValuesAndHelpAreEscaped() {
    MetricsText text;
    text.family("goblin_x", "a \\ b\nc", MetricsText::Type::Counter);
    text.sample("goblin_x", {{"method", "a\"b\\c\nd"}, {"verdict", "ok"}}, 1);
    QCOMPARE(text.text(), std::string("# HELP goblin_x a \\\\ b\\nc\n"
                                      "# TYPE goblin_x counter\n"
                                      "goblin_x{method=\"a\\\"b\\\\c\\nd\",verdict=\"ok\"} 1\n"));
}

void TestObservability::histogramBucketsAreCumulative() {
    Histogram histogram({0.001, 0.01, 0.1});
    for (const double seconds : {0.0005, 0.001, 0.002, 0.05, 0.05, 3.0})
        histogram.observe(seconds);
    MetricsText text;
    text.histogram("goblin_db_commit_seconds", "Commit latency.", histogram);
    QCOMPARE(text.text(), std::string("# HELP goblin_db_commit_seconds Commit latency.\n"
                                      "# TYPE goblin_db_commit_seconds histogram\n"
                                      "goblin_db_commit_seconds_bucket{le=\"0.001\"} 2\n"
                                      "goblin_db_commit_seconds_bucket{le=\"0.01\"} 3\n"
                                      "goblin_db_commit_seconds_bucket{le=\"0.1\"} 5\n"
                                      "goblin_db_commit_seconds_bucket{le=\"+Inf\"} 6\n"
                                      "goblin_db_commit_seconds_sum 3.1035\n"
                                      "goblin_db_commit_seconds_count 6\n"));
}

void TestObservability::metricsCarryTheSnapshot() {
    NodeCounters counters;
    counters.httpRequests["/metrics"] = 4;
    const std::string text = renderMetrics(sampleSnapshot(), counters);
    QVERIFY(contains(text, "# TYPE goblin_jobs gauge\n"));
    QVERIFY(contains(text, "goblin_jobs{kind=\"graph\",state=\"running\"} 2\n"));
    QVERIFY(contains(text, "goblin_jobs{kind=\"matmul\",state=\"done\"} 3\n"));
    QVERIFY(contains(text, "goblin_tasks_queued 3\n")); // 5 undecided, 2 of them leased
    QVERIFY(contains(text, "goblin_tasks_leased 2\n"));
    QVERIFY(contains(text, "goblin_volunteers_connected 1\n"));
    QVERIFY(contains(text, "# TYPE goblin_verdicts_total counter\n"));
    QVERIFY(contains(
        text,
        "goblin_verdicts_total{kind=\"matmul\",method=\"freivalds\",verdict=\"accepted\"} 12\n"));
    QVERIFY(contains(text, "goblin_verification_seconds_total 0.25\n"));
    QVERIFY(contains(text, "goblin_http_requests_total{path=\"/metrics\"} 4\n"));
    QVERIFY(contains(text, "goblin_db_commit_seconds_bucket{le=\"+Inf\"} 0\n"));
    QVERIFY(contains(text, "goblin_db_commit_seconds_count 0\n"));
    QVERIFY(!contains(text, "goblin_sent_bytes_total")); // not counted: not shown as zero
    auto traffic = std::make_shared<goblin::net::TrafficCounters>();
    traffic->bytesIn = 1234;
    traffic->bytesOut = 5678;
    counters.traffic = traffic;
    const std::string counted = renderMetrics(sampleSnapshot(), counters);
    QVERIFY(contains(
        counted, "# TYPE goblin_received_bytes_total counter\ngoblin_received_bytes_total 1234\n"));
    QVERIFY(contains(counted,
                     "# TYPE goblin_sent_bytes_total counter\ngoblin_sent_bytes_total 5678\n"));
    // Every line is a comment or a sample "name{labels} value".
    QVERIFY(!text.empty() && text.back() == '\n');
}

void TestObservability::statusPageEscapesEveryValue() {
    const std::string page = renderStatusPage(sampleSnapshot());
    QVERIFY(!contains(page, "<script"));
    QVERIFY(contains(page, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    QVERIFY(contains(page, "vol-&lt;b&gt;"));
    QVERIFY(contains(page, "vol-&quot;q&quot;"));
    QVERIFY(contains(page, "<td>job-1</td><td>matmul</td><td>done</td><td>4</td><td>4</td>"));
    QVERIFY(contains(page, "<td>yes</td>")); // quarantined
    QCOMPARE(htmlEscape("a&b<c>\"'"), std::string("a&amp;b&lt;c&gt;&quot;&#39;"));
}

void TestObservability::healthIsOkOnAWritableDatabaseWithRoom() {
    QTemporaryDir dir;
    NodeStore store(dir.filePath("node.db").toStdString());
    HealthProbe probe(store.database(), dir.path().toStdString(), plentyFree);
    QVERIFY(!probe.problem().has_value());
    QVERIFY(!probe.problem().has_value()); // again: the probe row is replaced, not duplicated
    // And with the real statvfs on a real directory (a test machine has 64 MiB free).
    HealthProbe real(store.database(), dir.path().toStdString());
    const auto problem = real.problem();
    QVERIFY2(!problem.has_value(), problem ? problem->c_str() : "");
}

void TestObservability::healthIs503WhenTheDatabaseCannotCommit() {
    QTemporaryDir dir;
    NodeStore store(dir.filePath("node.db").toStdString());
    NodeHttp http(
        store.database(), [] { return NodeSnapshot{}; },
        HealthProbe(store.database(), dir.path().toStdString(), plentyFree), [] { return 0.0; });
    QCOMPARE(http.answer("/healthz").status, 200u);
    // The connection refuses writes from now on, as a database on a failing disk does.
    QVERIFY(store.database().execute("PRAGMA query_only = 1").has_value());
    const auto answer = http.answer("/healthz");
    QCOMPARE(answer.status, 503u);
    QVERIFY2(contains(answer.body, "database cannot commit: "), answer.body.c_str());
    QVERIFY2(contains(answer.body, "readonly"), answer.body.c_str());
}

void TestObservability::healthIs503WhenTheDiskIsNearlyFull() {
    QTemporaryDir dir;
    NodeStore store(dir.filePath("node.db").toStdString());
    NodeHttp http(
        store.database(), [] { return NodeSnapshot{}; },
        HealthProbe(store.database(), dir.path().toStdString(), almostFull), [] { return 0.0; });
    const auto answer = http.answer("/healthz");
    QCOMPARE(answer.status, 503u);
    QVERIFY2(contains(answer.body, "disk almost full: 3 MiB free in "), answer.body.c_str());
    QVERIFY2(contains(answer.body, "(floor 64 MiB)"), answer.body.c_str());
}

void TestObservability::healthWatchesTheDatabaseDiskToo() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkdir("data"));
    NodeStore store(dir.filePath("node.db").toStdString());
    const std::filesystem::path databaseDir = std::filesystem::canonical(dir.path().toStdString());
    // Room for blobs, none where the database (and its WAL) lives.
    HealthProbe probe(store.database(), databaseDir / "data",
                      [&](const std::filesystem::path& path) -> goblin::Expected<std::uint64_t> {
                          if (std::filesystem::equivalent(path, databaseDir))
                              return std::uint64_t{1} << 20;
                          return std::uint64_t{10} << 30;
                      });
    const auto problem = probe.problem();
    QVERIFY(problem.has_value());
    QVERIFY2(contains(*problem, "disk almost full: 1 MiB free in " + databaseDir.string()),
             problem->c_str());
}

void TestObservability::commitsAreTimedAndRequestsCounted() {
    QTemporaryDir dir;
    NodeStore store(dir.filePath("node.db").toStdString());
    // Each reading of the injected clock advances it by 3 ms: one COMMIT takes 3 ms.
    double now = 0;
    NodeHttp http(
        store.database(), [] { return NodeSnapshot{}; },
        HealthProbe(store.database(), dir.path().toStdString(), plentyFree),
        [&now] { return now += 0.003; });
    {
        auto transaction = Transaction::begin(store.database());
        QVERIFY(transaction.has_value());
        QVERIFY(transaction->commit().has_value());
    }
    QCOMPARE(http.counters().dbCommitSeconds.count(), std::uint64_t{1});
    (void)http.answer("/nothing");
    (void)http.answer("/also-nothing");
    const auto metrics = http.answer("/metrics");
    QCOMPARE(metrics.status, 200u);
    QVERIFY(contains(metrics.contentType, "text/plain; version=0.0.4"));
    QVERIFY2(contains(metrics.body, "goblin_db_commit_seconds_bucket{le=\"0.0025\"} 0\n"),
             metrics.body.c_str());
    QVERIFY(contains(metrics.body, "goblin_db_commit_seconds_bucket{le=\"0.005\"} 1\n"));
    QVERIFY(contains(metrics.body, "goblin_db_commit_seconds_count 1\n"));
    QVERIFY(contains(metrics.body, "goblin_http_requests_total{path=\"/metrics\"} 1\n"));
    QVERIFY(contains(metrics.body, "goblin_http_requests_total{path=\"other\"} 2\n"));
    QCOMPARE(http.answer("/nothing").status, 404u);
    QCOMPARE(http.answer("/status").contentType, std::string("text/html; charset=utf-8"));
}

QTEST_APPLESS_MAIN(TestObservability)
#include "test_observability.moc"
