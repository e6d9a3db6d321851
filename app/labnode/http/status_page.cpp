#include "http/status_page.hpp"

#include <initializer_list>

namespace goblin::labnode {

std::string htmlEscape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
        case '&':
            out.append("&amp;");
            break;
        case '<':
            out.append("&lt;");
            break;
        case '>':
            out.append("&gt;");
            break;
        case '"':
            out.append("&quot;");
            break;
        case '\'':
            out.append("&#39;");
            break;
        default:
            out.push_back(c);
        }
    }
    return out;
}

namespace {

void row(std::string& out, std::initializer_list<std::string> cells, std::string_view tag = "td") {
    out.append("<tr>");
    for (const auto& cell : cells)
        out.append("<")
            .append(tag)
            .append(">")
            .append(htmlEscape(cell))
            .append("</")
            .append(tag)
            .append(">");
    out.append("</tr>\n");
}

void jobs(std::string& out, const NodeSnapshot& snapshot) {
    out.append("<h2>Jobs</h2>\n<table>\n");
    row(out, {"job", "kind", "state", "tasks done", "tasks"}, "th");
    for (const auto& job : snapshot.recentJobs)
        row(out, {job.id, job.kind, job.state, std::to_string(job.tasksDone),
                  std::to_string(job.tasksTotal)});
    out.append("</table>\n");
}

void volunteers(std::string& out, const NodeSnapshot& snapshot) {
    out.append("<h2>Connected volunteers</h2>\n<table>\n");
    // No network addresses: the page is unauthenticated, and a volunteer's address is personal
    // data (`goblin-labnode volunteers show ID` tells staff).
    row(out, {"volunteer", "backend", "slots", "leases", "audits passed", "quarantined"}, "th");
    for (const auto& volunteer : snapshot.volunteers)
        row(out, {volunteer.id, volunteer.backend, std::to_string(volunteer.slots),
                  std::to_string(volunteer.leases), std::to_string(volunteer.auditsPassed),
                  volunteer.quarantined ? "yes" : "no"});
    out.append("</table>\n");
}

void verdicts(std::string& out, const NodeSnapshot& snapshot) {
    out.append("<h2>Recent verdicts</h2>\n<table>\n");
    row(out, {"kind", "task", "volunteer", "method", "verdict"}, "th");
    for (const auto& verdict : snapshot.recentVerdicts)
        row(out, {verdict.kind, std::to_string(verdict.task), verdict.volunteer, verdict.method,
                  verdict.verdict});
    out.append("</table>\n");
}

} // namespace

std::string renderStatusPage(const NodeSnapshot& snapshot) {
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
                      "<title>GPU Goblin lab node</title></head>\n<body>\n"
                      "<h1>GPU Goblin lab node</h1>\n"
                      "<p><a href=\"/\">Live dashboard</a></p>\n";
    jobs(out, snapshot);
    volunteers(out, snapshot);
    verdicts(out, snapshot);
    out.append("</body>\n</html>\n");
    return out;
}

} // namespace goblin::labnode
