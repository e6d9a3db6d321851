#include "http/node_http.hpp"

#include "access/access_app.hpp"
#include "http/status_page.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

NodeHttp::NodeHttp(Database& db, std::function<NodeSnapshot()> snapshot, HealthProbe health,
                   std::function<double()> steadySeconds)
    : m_db(db), m_snapshot(std::move(snapshot)), m_health(std::move(health)) {
    m_db.observeCommits(std::move(steadySeconds),
                        [this](double seconds) { m_counters.dbCommitSeconds.observe(seconds); });
}

NodeHttp::~NodeHttp() {
    m_db.observeCommits({}, {});
}

net::HttpAnswer NodeHttp::answer(const std::string& path) {
    const bool known = path == "/healthz" || path == "/metrics" || path == "/status";
    ++m_counters.httpRequests[known ? path : "other"];
    if (path == "/healthz") {
        if (auto problem = m_health.problem())
            return {503, "text/plain; charset=utf-8", problem->append("\n")};
        return {200, "text/plain; charset=utf-8", "ok\n"};
    }
    if (path == "/metrics")
        return {200, "text/plain; version=0.0.4; charset=utf-8",
                renderMetrics(m_snapshot(), m_counters)};
    if (path == "/status")
        return {200, "text/html; charset=utf-8", renderStatusPage(m_snapshot())};
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
