#include "http/node_metrics.hpp"

namespace goblin::labnode {

std::vector<double> commitLatencyBounds() {
    return {0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
}

NodeCounters::NodeCounters() : dbCommitSeconds(commitLatencyBounds()) {}

namespace {

void renderProcess(MetricsText& out, const ProcessInfo& process) {
    using Type = MetricsText::Type;
    out.family("goblin_build_info", "The lab node's version; the value is always 1.", Type::Gauge);
    out.sample("goblin_build_info", {{"version", process.version}}, 1);
    out.family("process_start_time_seconds", "When the lab node started, in seconds since 1970.",
               Type::Gauge);
    out.sample("process_start_time_seconds", process.startTime);
    out.family("goblin_uptime_seconds", "Seconds since the lab node started.", Type::Gauge);
    out.sample("goblin_uptime_seconds", process.uptimeSeconds);
}

void renderPeople(MetricsText& out, const NodeSnapshot& snapshot) {
    using Type = MetricsText::Type;
    out.family("goblin_access_requests_pending",
               "Researchers' access requests waiting for lab staff's decision.", Type::Gauge);
    out.sample("goblin_access_requests_pending",
               static_cast<double>(snapshot.accessRequestsPending));
    out.family("goblin_researchers_connected", "Researcher connections whose hello was accepted.",
               Type::Gauge);
    out.sample("goblin_researchers_connected", static_cast<double>(snapshot.researchersConnected));
    out.family("goblin_volunteers_banned", "Volunteers lab staff banned (bans in force).",
               Type::Gauge);
    out.sample("goblin_volunteers_banned", static_cast<double>(snapshot.volunteersBanned));
    out.family("goblin_volunteers_quarantined",
               "Volunteers caught returning a wrong result, connected or not.", Type::Gauge);
    out.sample("goblin_volunteers_quarantined",
               static_cast<double>(snapshot.volunteersQuarantined));
}

} // namespace

std::string renderMetrics(const NodeSnapshot& snapshot, const NodeCounters& counters,
                          const ProcessInfo& process) {
    using Type = MetricsText::Type;
    MetricsText out;
    renderProcess(out, process);
    out.family("goblin_jobs", "Jobs by kind and state.", Type::Gauge);
    for (const auto& row : snapshot.jobs)
        out.sample("goblin_jobs", {{"kind", row.kind}, {"state", row.first}},
                   static_cast<double>(row.count));
    out.family("goblin_tasks_queued",
               "Tasks of running jobs not yet decided and not leased to a volunteer.", Type::Gauge);
    out.sample("goblin_tasks_queued", static_cast<double>(std::max<std::int64_t>(
                                          0, snapshot.tasksPending - snapshot.leases)));
    out.family("goblin_tasks_leased", "Leases held by connected volunteers.", Type::Gauge);
    out.sample("goblin_tasks_leased", static_cast<double>(snapshot.leases));
    out.family("goblin_volunteers_connected",
               "Volunteers connected whose hello was accepted and who may work.", Type::Gauge);
    out.sample("goblin_volunteers_connected", static_cast<double>(snapshot.volunteers.size()));
    renderPeople(out, snapshot);
    out.family("goblin_verdicts_total",
               "Verdicts on volunteers' results by job kind, deciding method and outcome.",
               Type::Counter);
    for (const auto& row : snapshot.verdicts)
        out.sample("goblin_verdicts_total",
                   {{"kind", row.kind}, {"method", row.first}, {"verdict", row.second}},
                   static_cast<double>(row.count));
    out.family("goblin_verification_seconds_total",
               "Seconds the node spent checking matmul results.", Type::Counter);
    out.sample("goblin_verification_seconds_total", snapshot.verificationSeconds);
    out.family("goblin_http_requests_total", "Plain HTTP GET requests since the node started.",
               Type::Counter);
    for (const auto& [path, count] : counters.httpRequests)
        out.sample("goblin_http_requests_total", {{"path", path}}, static_cast<double>(count));
    if (counters.traffic) {
        out.family("goblin_received_bytes_total",
                   "WebSocket message bytes received from volunteers and researchers.",
                   Type::Counter);
        out.sample("goblin_received_bytes_total",
                   static_cast<double>(counters.traffic->bytesIn.load()));
        out.family("goblin_sent_bytes_total",
                   "WebSocket message bytes sent to volunteers and researchers.", Type::Counter);
        out.sample("goblin_sent_bytes_total",
                   static_cast<double>(counters.traffic->bytesOut.load()));
    }
    out.histogram("goblin_db_commit_seconds", "Latency of database COMMITs since the node started.",
                  counters.dbCommitSeconds);
    return out.text();
}

} // namespace goblin::labnode
