// Tests of the node's plain HTTP pages: Prometheus text (HELP/TYPE lines, escaped label values,
// cumulative histogram buckets), the status page's escaping, and /healthz answering 503 with its
// reason when the database cannot commit or the disk is nearly full (an injected free-space probe).
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include <boost/json/parse.hpp>

#include "http/dashboard_json.hpp"
#include "http/dashboard_page.hpp"
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
    snapshot.recentJobs = {{"job-1", "matmul", "done", 4, 4, 10.0, 0.0}};
    snapshot.volunteers = {{"vol-<b>", "<script>alert('x')</script>", 2, 1, 3, true, {}}};
    snapshot.recentVerdicts = {{"matmul", 7, "vol-\"q\"", "freivalds", "accepted"}};
    snapshot.jobs.push_back({"train", "done", "", 1});
    snapshot.accessRequestsPending = 4;
    snapshot.researchersConnected = 2;
    snapshot.volunteersBanned = 1;
    snapshot.volunteersQuarantined = 3;
    snapshot.volunteers[0].holds = {{"graph", 12, "g-1"}};
    TrainingRow training{"t-1", "running", 2, 5, 100.0, 160.0, "g-1", {}};
    training.lastRounds = {{0, 2.5, 2, 0, 1.5, "g-0"},
                           {1, std::numeric_limits<double>::quiet_NaN(), 2, 1, 1.25, "g-00"}};
    snapshot.training = {training};
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
    void metricsCarryTheProcessAndThePeople();
    void dashboardJsonCarriesTheSnapshotAndTheHistory();
    void dashboardFilesAreServedWithTheirPolicy();
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

void TestObservability::metricsCarryTheProcessAndThePeople() {
    const std::string text =
        renderMetrics(sampleSnapshot(), NodeCounters{}, ProcessInfo{"1.2.3", 1700000000.5, 42.25});
    QVERIFY(
        contains(text, "# TYPE goblin_build_info gauge\ngoblin_build_info{version=\"1.2.3\"} 1\n"));
    QVERIFY(contains(text, "process_start_time_seconds 1700000000.5\n"));
    QVERIFY(contains(text, "goblin_uptime_seconds 42.25\n"));
    QVERIFY(contains(text, "goblin_jobs{kind=\"train\",state=\"done\"} 1\n"));
    QVERIFY(contains(text, "goblin_access_requests_pending 4\n"));
    QVERIFY(contains(text, "goblin_researchers_connected 2\n"));
    QVERIFY(contains(text, "goblin_volunteers_banned 1\n"));
    QVERIFY(contains(text, "goblin_volunteers_quarantined 3\n"));
}

void TestObservability::dashboardJsonCarriesTheSnapshotAndTheHistory() {
    double now = 6000.0 + 30.0; // minute 100, half gone
    MinuteHistory history([&now] { return now; });
    history.add("accepted matmul", 3);
    now += 60.0;
    history.add("rejected graph");
    const auto parsed = boost::json::parse(renderDashboardJson(sampleSnapshot(), history.window(),
                                                               ProcessInfo{"9.9", 50.0, 1.0}, now));
    const auto& root = parsed.as_object();
    QVERIFY(root.at("version").as_string() == "9.9");
    QCOMPARE(root.at("counts").at("tasks_queued").as_int64(), std::int64_t{3});
    QCOMPARE(root.at("counts").at("access_requests_pending").as_int64(), std::int64_t{4});
    QVERIFY(root.at("jobs").at(0).at("id").as_string() == "job-1");
    QVERIFY(root.at("jobs").at(0).at("finished").is_null()); // not finished
    const auto& volunteer = root.at("volunteers").at(0).as_object();
    QVERIFY(volunteer.at("backend").as_string() == "<script>alert('x')</script>");
    QVERIFY(volunteer.at("holds").at(0).at("job").as_string() == "g-1");
    const auto& training = root.at("training").at(0).as_object();
    QCOMPARE(training.at("rounds").as_int64(), std::int64_t{5});
    QCOMPARE(training.at("last_rounds").at(0).at("loss").as_double(), 2.5);
    QVERIFY(training.at("last_rounds").at(1).at("loss").is_null()); // NaN is not JSON
    const auto& window = root.at("history").as_object();
    QCOMPARE(window.at("first_minute").to_number<double>(), (101.0 - 59.0) * 60.0);
    const auto& accepted = window.at("series").at("accepted matmul").as_array();
    QCOMPARE(accepted.size(), std::size_t{60});
    QCOMPARE(accepted.at(58).to_number<std::int64_t>(), std::int64_t{3});
    QCOMPARE(window.at("series").at("rejected graph").at(59).to_number<std::int64_t>(),
             std::int64_t{1});
}

void TestObservability::dashboardFilesAreServedWithTheirPolicy() {
    QTemporaryDir dir;
    NodeStore store(dir.filePath("node.db").toStdString());
    double steady = 0;
    NodeHttp http(
        store.database(), [] { return NodeSnapshot{}; },
        HealthProbe(store.database(), dir.path().toStdString(), plentyFree),
        [&steady] { return steady += 0.5; });
    double wall = 7200.0;
    http.describeProcess("1.0", [&wall] { return wall; });
    http.countVerdict("matmul", true);
    http.countVerdict("matmul", false);
    const auto page = http.answer("/");
    QCOMPARE(page.status, 200u);
    QVERIFY(contains(page.body, "<script src=\"/chart.min.js\""));
    const auto policy = std::find_if(page.headers.begin(), page.headers.end(), [](const auto& h) {
        return h.first == "Content-Security-Policy";
    });
    QVERIFY(policy != page.headers.end());
    QVERIFY(contains(policy->second, "default-src 'none'; script-src 'self'"));
    QCOMPARE(http.answer("/dashboard.js").contentType,
             std::string("text/javascript; charset=utf-8"));
    QCOMPARE(http.answer("/dashboard.css").status, 200u);
    QCOMPARE(http.answer("/chart.min.js").status, 404u); // no Chart.js given
    http.serveDashboard(DashboardPage("/* chart */"));
    QCOMPARE(http.answer("/chart.min.js").body, std::string("/* chart */"));
    const auto data = http.answer("/dashboard.json");
    QCOMPARE(data.contentType, std::string("application/json"));
    const auto parsed = boost::json::parse(data.body);
    QCOMPARE(parsed.at("started").to_number<double>(), 7200.0);
    QCOMPARE(parsed.at("history").at("series").at("accepted matmul").at(59).to_number<int>(), 1);
    QCOMPARE(parsed.at("history").at("series").at("rejected matmul").at(59).to_number<int>(), 1);
    QVERIFY(contains(http.answer("/metrics").body, "goblin_http_requests_total{path=\"/\"} 1\n"));
    QVERIFY(!readChartJs(dir.filePath("missing.js").toStdString()).has_value());
}

QTEST_APPLESS_MAIN(TestObservability)
#include "test_observability.moc"
