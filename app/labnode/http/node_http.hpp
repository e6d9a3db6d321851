// The lab node's plain HTTP pages: /healthz (HealthProbe), /metrics (Prometheus text), /status
// (HTML for staff), the live dashboard at / with its data at /dashboard.json and, when given one,
// the access-request app under /access. WsServer hands each request over; main.cpp posts it here,
// to the core thread, where this object lives with the database, and posts the answer back.
#pragma once

#include <functional>
#include <string>

#include "goblin/net/ws_server.hpp"
#include "http/dashboard_page.hpp"
#include "http/health_probe.hpp"
#include "http/minute_history.hpp"
#include "http/node_metrics.hpp"
#include "http/node_snapshot.hpp"

namespace goblin::labnode {

namespace access {
class AccessApp;
}

class NodeHttp {
public:
    // Times every COMMIT on `db` with `steadySeconds` into goblin_db_commit_seconds; the node's
    // uptime counts on the same clock from here.
    NodeHttp(Database& db, std::function<NodeSnapshot()> snapshot, HealthProbe health,
             std::function<double()> steadySeconds);
    ~NodeHttp();
    NodeHttp(const NodeHttp&) = delete;
    NodeHttp& operator=(const NodeHttp&) = delete;

    // /metrics reports the WebSocket bytes these counters see (WsServer::setTrafficCounters).
    void countTraffic(std::shared_ptr<const net::TrafficCounters> traffic) {
        m_counters.traffic = std::move(traffic);
    }
    net::HttpAnswer answer(const std::string& path);
    // Any request: GET of the pages above, or the access app's pages (set with serveAccess).
    void handle(const net::HttpRequest& request, net::HttpReply reply);
    void serveAccess(access::AccessApp* app) { m_access = app; }
    const NodeCounters& counters() const { return m_counters; }

    // The version /metrics and the dashboard report and the wall clock (epoch seconds) of the
    // start time and of the dashboard's minutes; until called, "unknown" and the system clock.
    void describeProcess(std::string version, std::function<double()> wallSeconds);
    // The dashboard's files (Chart.js read by main at start-up).
    void serveDashboard(DashboardPage page) { m_dashboard = std::move(page); }
    // A committed verdict, counted into the dashboard's minute history ("accepted matmul", …).
    void countVerdict(const std::string& kind, bool accepted);
    ProcessInfo processInfo() const;

private:
    Database& m_db;
    std::function<NodeSnapshot()> m_snapshot;
    HealthProbe m_health;
    NodeCounters m_counters;
    access::AccessApp* m_access = nullptr;
    std::function<double()> m_steadySeconds;
    double m_startedSteady = 0;
    std::string m_version = "unknown";
    std::function<double()> m_wallSeconds;
    double m_startedWall = 0;
    MinuteHistory m_history;
    DashboardPage m_dashboard;
};

} // namespace goblin::labnode
