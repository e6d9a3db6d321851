#include "staff/job_commands.hpp"

#include <chrono>
#include <iostream>
#include <stdexcept>
#include <thread>

#include <boost/json.hpp>

#include "access/access_requests.hpp"
#include "staff/job_listing.hpp"
#include "staff/json_output.hpp"
#include "staff/option_checks.hpp"
#include "staff/staff_cli.hpp"
#include "store/job_requests.hpp"
#include "store/node_store.hpp"

namespace po = boost::program_options;

namespace goblin::labnode {
namespace {

const CommandUsage kListUsage{"goblin-labnode jobs list --db PATH [--json]",
                              "Lists jobs, newest first: id, kind, state, tasks done of all "
                              "(rounds for a training job), created, researcher."};
const CommandUsage kShowUsage{"goblin-labnode jobs show ID --db PATH [--json]",
                              "Shows one job: kind, state, researcher, times, tasks, verdicts "
                              "and volunteers (no research data)."};
const CommandUsage kCancelUsage{
    "goblin-labnode jobs cancel ID --db PATH [--wait S]",
    "Cancels a running job: the node drops its tasks and leases, deletes its data (a training "
    "job keeps its committed rounds) and tells its researcher (code cancelled). The node serving "
    "the database does it at its next two-second check; this waits up to --wait seconds (default "
    "10) for it."};
const CommandUsage kPurgeUsage{
    "goblin-labnode jobs purge ID --db PATH [--wait S]",
    "Deletes a job that no longer runs (done, failed, cancelled, released): its data and its "
    "records. A running job is refused: cancel it first. Carried out by the node serving the "
    "database, like cancel."};
const CommandUsage kStatusUsage{
    "goblin-labnode status --db PATH [--json]",
    "Counts jobs by state, volunteers (ever registered, banned, quarantined), researchers and\n"
    "the access requests waiting for a decision (goblin-labnode requests list --state pending)."};

std::string taskCount(const JobListing& job) {
    std::string text = groupedNumber(job.tasksDone);
    text.append("/").append(groupedNumber(job.tasks));
    return text;
}

boost::json::object jobJson(const JobListing& job) {
    boost::json::object out{{"id", job.id},
                            {"kind", job.kind},
                            {"state", job.state},
                            {"researcher", job.researcher},
                            {job.kind == "train" ? "rounds" : "tasks", job.tasks},
                            {job.kind == "train" ? "rounds_done" : "tasks_done", job.tasksDone},
                            {"created", jsonTime(job.createdAt)},
                            {"finished", jsonTime(job.finishedAt)}};
    if (job.owner.owned())
        out["round_of"] = {{"job", job.owner.job}, {"round", job.owner.round}};
    return out;
}

int list(const std::vector<std::string>& args) {
    po::options_description options("options");
    addJsonOption(options);
    const auto parsed = parseCommand(args, options, {}, kListUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    const auto jobs = listJobs(store.database());
    if (wantsJson(*parsed)) {
        boost::json::array rows;
        for (const JobListing& job : jobs)
            rows.push_back(jobJson(job));
        printJson(rows);
        return 0;
    }
    std::cout << "ID\tKIND\tSTATE\tTASKS\tCREATED\tRESEARCHER\n";
    for (const JobListing& job : jobs)
        std::cout << job.id << '\t' << job.kind << '\t' << job.state << '\t' << taskCount(job)
                  << '\t' << utcTime(job.createdAt) << '\t' << job.researcher << '\n';
    std::cout << groupedNumber(static_cast<std::int64_t>(jobs.size()))
              << (jobs.size() == 1 ? " job" : " jobs") << std::endl;
    return 0;
}

int show(const std::vector<std::string>& args) {
    po::options_description options("options");
    options.add_options()("job", po::value<std::string>(), "the job's id");
    addJsonOption(options);
    po::positional_options_description positional;
    positional.add("job", 1);
    const auto parsed = parseCommand(args, options, positional, kShowUsage);
    if (!parsed)
        return 0;
    if (!parsed->count("job"))
        throw std::runtime_error("usage: goblin-labnode jobs show ID --db PATH");
    const std::string id = (*parsed)["job"].as<std::string>();
    NodeStore store(existingDatabase(*parsed));
    const auto job = findJob(store.database(), id);
    if (!job) {
        std::string message = "no job ";
        message.append(id);
        throw std::runtime_error(message);
    }
    const JobResultCounts results = jobResultCounts(store.database(), *job);
    if (wantsJson(*parsed)) {
        boost::json::object out = jobJson(*job);
        out["verdicts"] = {{"accepted", results.accepted}, {"rejected", results.rejected}};
        out["volunteers"] = results.volunteers;
        printJson(out);
        return 0;
    }
    std::cout << "job         " << job->id << "\n"
              << "kind        " << job->kind << "\n"
              << "state       " << job->state << "\n"
              << "researcher  " << job->researcher << "\n"
              << (job->owner.owned() ? "round       " + std::to_string(job->owner.round) +
                                           " of training job " + job->owner.job + "\n"
                                     : std::string())
              << "created     " << utcTime(job->createdAt) << "\n"
              << "finished    " << utcTime(job->finishedAt) << "\n"
              << (job->kind == "train" ? "rounds      " : "tasks       ") << taskCount(*job)
              << " done\n"
              << "verdicts    " << groupedNumber(results.accepted) << " accepted, "
              << groupedNumber(results.rejected) << " rejected\n"
              << "volunteers  " << groupedNumber(results.volunteers) << std::endl;
    return 0;
}

// The node carries the request out at its next staff check: wait for the outcome it records.
int requestAction(const std::vector<std::string>& args, JobAction action,
                  const CommandUsage& usage) {
    po::options_description options("options");
    options.add_options()("job", po::value<std::string>(),
                          "the job's id")("wait", po::value<double>()->default_value(10.0, "10"),
                                          "seconds to wait for the node to carry it out (0 to "
                                          "3600)");
    po::positional_options_description positional;
    positional.add("job", 1);
    const auto parsed = parseCommand(args, options, positional, usage);
    if (!parsed)
        return 0;
    requireRange(*parsed, "wait", 0.0, 3600.0);
    if (!parsed->count("job"))
        throw std::runtime_error("usage: " + usage.synopsis);
    const std::string id = (*parsed)["job"].as<std::string>();
    const char* verb = action == JobAction::Cancel ? "cancel" : "purge";
    NodeStore store(existingDatabase(*parsed));
    const auto job = findJob(store.database(), id);
    if (!job) {
        std::string message = "no job ";
        message.append(id);
        throw std::runtime_error(message);
    }
    if (job->owner.owned())
        throw std::runtime_error(job->owner.refusal(id, verb).message);
    if (action == JobAction::Cancel && job->state != "running")
        throw std::runtime_error("job " + id + " is " + job->state + ": only a running job can " +
                                 "be cancelled");
    if (action == JobAction::Purge && job->state == "running")
        throw std::runtime_error("job " + id + " is running: cancel it first (goblin-labnode " +
                                 "jobs cancel " + id + ")");
    auto request = requestJobAction(store.database(), id, action, wallClock());
    if (!request)
        throw std::runtime_error("cannot record the request: " + request.error().message);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>((*parsed)["wait"].as<double>());
    for (;;) {
        if (const auto outcome = jobRequestOutcome(store.database(), *request)) {
            if (*outcome != "ok")
                throw std::runtime_error(std::string("the node refused to ") + verb + " job " + id +
                                         ": " + *outcome);
            std::cout << "job " << id << (action == JobAction::Cancel ? " cancelled" : " purged")
                      << std::endl;
            return 0;
        }
        if (std::chrono::steady_clock::now() >= deadline)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::cout << verb << " of job " << id
              << " requested; no node has carried it out yet (is `goblin-labnode serve` running "
                 "on this database?). The node does it at its next check."
              << std::endl;
    return 0;
}

} // namespace

int jobCommand(const std::vector<std::string>& args) {
    return runStaffAction(
        args, "jobs",
        {{"list", &kListUsage, list},
         {"show", &kShowUsage, show},
         {"cancel", &kCancelUsage,
          [](const auto& rest) { return requestAction(rest, JobAction::Cancel, kCancelUsage); }},
         {"purge", &kPurgeUsage,
          [](const auto& rest) { return requestAction(rest, JobAction::Purge, kPurgeUsage); }}});
}

int statusCommand(const std::vector<std::string>& args) {
    po::options_description options("options");
    addJsonOption(options);
    const auto parsed = parseCommand(args, options, {}, kStatusUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    const NodeCounts counts = countNode(store.database());
    const auto pending =
        static_cast<std::int64_t>(access::listAccessRequests(store.database(), "pending").size());
    std::int64_t jobs = 0;
    boost::json::object byState;
    for (const auto& [state, count] : counts.jobsByState) {
        jobs += count;
        byState[state] = count;
    }
    if (wantsJson(*parsed)) {
        printJson(
            {{"jobs", {{"total", jobs}, {"by_state", byState}}},
             {"volunteers",
              {{"registered", counts.volunteers},
               {"banned", counts.banned},
               {"quarantined", counts.quarantined}}},
             {"researchers", {{"total", counts.researchers}, {"active", counts.activeResearchers}}},
             {"access_requests", {{"pending", pending}}}});
        return 0;
    }
    std::cout << "jobs         " << groupedNumber(jobs);
    const char* separator = " (";
    for (const auto& [state, count] : counts.jobsByState) {
        std::cout << separator << groupedNumber(count) << ' ' << state;
        separator = ", ";
    }
    std::cout << (counts.jobsByState.empty() ? "" : ")") << "\n"
              << "volunteers   " << groupedNumber(counts.volunteers) << " registered, "
              << groupedNumber(counts.banned) << " banned, " << groupedNumber(counts.quarantined)
              << " quarantined\n"
              << "researchers  " << groupedNumber(counts.researchers) << " ("
              << groupedNumber(counts.activeResearchers) << " active)\n"
              << "requests     " << groupedNumber(pending) << " pending";
    if (pending > 0)
        std::cout << " (goblin-labnode requests list --state pending)";
    std::cout << std::endl;
    return 0;
}

} // namespace goblin::labnode
