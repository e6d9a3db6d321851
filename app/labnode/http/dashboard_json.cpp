#include "http/dashboard_json.hpp"

#include <cmath>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace goblin::labnode {

namespace json = boost::json;

namespace {

json::value number(double value) {
    if (!std::isfinite(value))
        return nullptr;
    return value;
}

json::object counts(const NodeSnapshot& snapshot) {
    return {
        {"tasks_queued", std::max<std::int64_t>(0, snapshot.tasksPending - snapshot.leases)},
        {"tasks_leased", snapshot.leases},
        {"volunteers_connected", static_cast<std::int64_t>(snapshot.volunteers.size())},
        {"volunteers_quarantined", snapshot.volunteersQuarantined},
        {"volunteers_banned", snapshot.volunteersBanned},
        {"researchers_connected", snapshot.researchersConnected},
        {"access_requests_pending", snapshot.accessRequestsPending},
        {"verification_seconds", number(snapshot.verificationSeconds)},
    };
}

json::array jobs(const NodeSnapshot& snapshot) {
    json::array out;
    for (const JobRow& job : snapshot.recentJobs)
        out.push_back(json::object{
            {"id", job.id},
            {"kind", job.kind},
            {"state", job.state},
            {"tasks_done", job.tasksDone},
            {"tasks", job.tasksTotal},
            {"created", number(job.createdAt)},
            {"finished", job.finishedAt > 0 ? number(job.finishedAt) : json::value(nullptr)}});
    return out;
}

json::array training(const NodeSnapshot& snapshot) {
    json::array out;
    for (const TrainingRow& job : snapshot.training) {
        json::array rounds;
        for (const RoundRow& round : job.lastRounds)
            rounds.push_back(json::object{{"round", round.round},
                                          {"loss", number(round.loss)},
                                          {"tasks", round.tasks},
                                          {"rejected", round.rejected},
                                          {"seconds", number(round.seconds)},
                                          {"graph_job", round.graphJob}});
        out.push_back(json::object{{"id", job.id},
                                   {"state", job.state},
                                   {"rounds_done", job.roundsDone},
                                   {"rounds", job.rounds},
                                   {"created", number(job.createdAt)},
                                   {"updated", number(job.updatedAt)},
                                   {"round_job", job.roundJob},
                                   {"last_rounds", std::move(rounds)}});
    }
    return out;
}

json::array volunteers(const NodeSnapshot& snapshot) {
    json::array out;
    for (const VolunteerRow& volunteer : snapshot.volunteers) {
        json::array holds;
        for (const HeldTask& task : volunteer.holds)
            holds.push_back(
                json::object{{"kind", task.kind}, {"task", task.task}, {"job", task.job}});
        out.push_back(json::object{{"id", volunteer.id},
                                   {"backend", volunteer.backend},
                                   {"slots", volunteer.slots},
                                   {"leases", volunteer.leases},
                                   {"audits_passed", volunteer.auditsPassed},
                                   {"quarantined", volunteer.quarantined},
                                   {"holds", std::move(holds)}});
    }
    return out;
}

json::array verdicts(const NodeSnapshot& snapshot) {
    json::array out;
    for (const VerdictRow& verdict : snapshot.recentVerdicts)
        out.push_back(json::object{{"kind", verdict.kind},
                                   {"task", verdict.task},
                                   {"volunteer", verdict.volunteer},
                                   {"method", verdict.method},
                                   {"verdict", verdict.verdict}});
    return out;
}

json::object history(const MinuteHistory::Window& window) {
    json::object series;
    for (const auto& [name, counts] : window.series) {
        json::array values;
        for (const std::uint64_t count : counts)
            values.push_back(count);
        series[name] = std::move(values);
    }
    return {{"first_minute", number(window.firstMinute)},
            {"minutes", MinuteHistory::kMinutes},
            {"series", std::move(series)}};
}

} // namespace

std::string renderDashboardJson(const NodeSnapshot& snapshot, const MinuteHistory::Window& window,
                                const ProcessInfo& process, double now) {
    json::object out{{"now", number(now)},
                     {"version", process.version},
                     {"started", number(process.startTime)},
                     {"counts", counts(snapshot)},
                     {"jobs", jobs(snapshot)},
                     {"training", training(snapshot)},
                     {"volunteers", volunteers(snapshot)},
                     {"verdicts", verdicts(snapshot)},
                     {"history", history(window)}};
    return json::serialize(out);
}

} // namespace goblin::labnode
