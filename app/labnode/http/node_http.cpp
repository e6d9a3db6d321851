#include "http/node_http.hpp"

#include <chrono>

#include "access/access_app.hpp"
#include "http/dashboard_json.hpp"
#include "http/status_page.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

namespace {

double systemWallSeconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool isKnownPath(const std::string& path) {
    return path == "/healthz" || path == "/metrics" || path == "/status" ||
           path == "/dashboard.json" || DashboardPage::serves(path);
}

} // namespace

NodeHttp::NodeHttp(Database& db, std::function<NodeSnapshot()> snapshot, HealthProbe health,
                   std::function<double()> steadySeconds)
    : m_db(db), m_snapshot(std::move(snapshot)), m_health(std::move(health)),
      m_steadySeconds(std::move(steadySeconds)), m_startedSteady(m_steadySeconds()),
      m_wallSeconds(systemWallSeconds), m_startedWall(m_wallSeconds()),
      m_history([this] { return m_wallSeconds(); }) {
    m_db.observeCommits(m_steadySeconds,
                        [this](double seconds) { m_counters.dbCommitSeconds.observe(seconds); });
}

void NodeHttp::describeProcess(std::string version, std::function<double()> wallSeconds) {
    m_version = std::move(version);
    m_wallSeconds = std::move(wallSeconds);
    m_startedWall = m_wallSeconds();
}

void NodeHttp::countVerdict(const std::string& kind, bool accepted) {
    std::string series = accepted ? "accepted " : "rejected ";
    m_history.add(series.append(kind));
}

ProcessInfo NodeHttp::processInfo() const {
    return ProcessInfo{m_version, m_startedWall, m_steadySeconds() - m_startedSteady};
}

NodeHttp::~NodeHttp() {
    m_db.observeCommits({}, {});
}

net::HttpAnswer NodeHttp::answer(const std::string& path) {
    ++m_counters.httpRequests[isKnownPath(path) ? path : "other"];
    if (path == "/healthz") {
        if (auto problem = m_health.problem())
            return {503, "text/plain; charset=utf-8", problem->append("\n")};
        return {200, "text/plain; charset=utf-8", "ok\n"};
    }
    if (path == "/metrics")
        return {200, "text/plain; version=0.0.4; charset=utf-8",
                renderMetrics(m_snapshot(), m_counters, processInfo())};
    if (path == "/status")
        return {200, "text/html; charset=utf-8", renderStatusPage(m_snapshot())};
    if (path == "/dashboard.json") {
        net::HttpAnswer answer{
            200, "application/json",
            renderDashboardJson(m_snapshot(), m_history.window(), processInfo(), m_wallSeconds())};
        addDashboardHeaders(answer);
        return answer;
    }
    if (auto answer = m_dashboard.answer(path))
        return std::move(*answer);
    return {};
}

void NodeHttp::handle(const net::HttpRequest& request, net::HttpReply reply) {
    if (m_access && access::AccessApp::handles(request.path)) {
        ++m_counters.httpRequests["/access"];
        return m_access->handle(request, std::move(reply));
    }
    if (request.method != "GET") {
        ++m_counters.httpRequests["other"];
        return reply({405, "text/plain; charset=utf-8", "method not allowed\n"});
    }
    reply(answer(request.path));
}

} // namespace goblin::labnode
