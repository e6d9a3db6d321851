#include "job_commands.hpp"

#include <iostream>
#include <stdexcept>

#include "job_listing.hpp"
#include "node_store.hpp"
#include "staff_cli.hpp"

namespace po = boost::program_options;

namespace goblin::labnode {
namespace {

const CommandUsage kListUsage{"goblin-labnode jobs list --db PATH",
                              "Lists jobs, newest first: id, kind, state, tasks done of all "
                              "(rounds for a training job), created, researcher."};
const CommandUsage kShowUsage{"goblin-labnode jobs show ID --db PATH",
                              "Shows one job: kind, state, researcher, times, tasks, verdicts "
                              "and volunteers (no research data)."};
const CommandUsage kStatusUsage{
    "goblin-labnode status --db PATH",
    "Counts jobs by state, volunteers (ever registered, banned, quarantined) and researchers."};

std::string taskCount(const JobListing& job) {
    std::string text = groupedNumber(job.tasksDone);
    text.append("/").append(groupedNumber(job.tasks));
    return text;
}

int list(const std::vector<std::string>& args) {
    const auto parsed = parseCommand(args, po::options_description("options"), {}, kListUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    const auto jobs = listJobs(store.database());
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
    std::cout << "job         " << job->id << "\n"
              << "kind        " << job->kind << "\n"
              << "state       " << job->state << "\n"
              << "researcher  " << job->researcher << "\n"
              << "created     " << utcTime(job->createdAt) << "\n"
              << "finished    " << utcTime(job->finishedAt) << "\n"
              << (job->kind == "train" ? "rounds      " : "tasks       ") << taskCount(*job)
              << " done\n"
              << "verdicts    " << groupedNumber(results.accepted) << " accepted, "
              << groupedNumber(results.rejected) << " rejected\n"
              << "volunteers  " << groupedNumber(results.volunteers) << std::endl;
    return 0;
}

} // namespace

int jobCommand(const std::vector<std::string>& args) {
    const std::string action = args.empty() ? std::string() : args.front();
    const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    if (action == "list")
        return list(rest);
    if (action == "show")
        return show(rest);
    if (action == "--help" || action == "-h") {
        std::cout << "usage:\n  " << kListUsage.synopsis << "\n  " << kShowUsage.synopsis
                  << "\n(--help after an action for its options)\n";
        return 0;
    }
    throw std::runtime_error(
        "usage: goblin-labnode jobs list|show ... --db PATH (--help for more)");
}

int statusCommand(const std::vector<std::string>& args) {
    const auto parsed = parseCommand(args, po::options_description("options"), {}, kStatusUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    const NodeCounts counts = countNode(store.database());
    std::int64_t jobs = 0;
    for (const auto& [state, count] : counts.jobsByState)
        jobs += count;
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
              << groupedNumber(counts.activeResearchers) << " active)" << std::endl;
    return 0;
}

} // namespace goblin::labnode
