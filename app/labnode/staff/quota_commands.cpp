#include "staff/quota_commands.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "staff/email_address.hpp"
#include "store/node_store.hpp"
#include "store/researcher_quotas.hpp"

namespace po = boost::program_options;

namespace goblin::labnode {

const CommandUsage kQuotaUsage{
    "goblin-labnode researchers quota EMAIL --db PATH [--max-bytes B] [--max-flops F] "
    "[--max-running-jobs N]",
    "Shows a researcher's quota, or sets the limits given: the bytes one job may upload (B in\n"
    "bytes or with KiB, MiB, GiB, TiB), the FLOPs it may compute, and how many of their jobs may\n"
    "run at once (0: none). Defaults: 64 GiB, 1e16 FLOPs, 16 jobs. The node refuses a job over\n"
    "the quota before it is uploaded; running jobs are not stopped."};

namespace {

std::string quotaLine(const std::string& email, const ResearcherQuota& quota) {
    char flops[32];
    std::snprintf(flops, sizeof flops, "%.6g", quota.maxFlops);
    return email + "\tmax_bytes " + groupedNumber(quota.maxBytes) + "\tmax_flops " + flops +
           "\tmax_running_jobs " + groupedNumber(quota.maxRunningJobs);
}

QuotaChange changeOf(const po::variables_map& options) {
    QuotaChange change;
    if (options.count("max-bytes")) {
        const std::string text = options["max-bytes"].as<std::string>();
        change.maxBytes = parseByteSize(text);
        if (!change.maxBytes)
            throw std::runtime_error("--max-bytes: '" + text +
                                     "' is not a size of at least 1 byte (e.g. 64GiB)");
    }
    if (options.count("max-flops")) {
        const double flops = options["max-flops"].as<double>();
        if (!std::isfinite(flops) || flops <= 0)
            throw std::runtime_error("--max-flops: must be a number above 0 (e.g. 1e16)");
        change.maxFlops = flops;
    }
    if (options.count("max-running-jobs")) {
        const std::int64_t jobs = options["max-running-jobs"].as<std::int64_t>();
        if (jobs < 0 || jobs > 1'000'000)
            throw std::runtime_error("--max-running-jobs: must be from 0 to 1,000,000");
        change.maxRunningJobs = jobs;
    }
    return change;
}

} // namespace

std::optional<std::int64_t> parseByteSize(const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    std::string unit = text.substr(used);
    while (!unit.empty() && unit.front() == ' ')
        unit.erase(0, 1);
    const std::pair<const char*, double> units[] = {
        {"", 1},       {"B", 1},        {"K", 0x1p10}, {"KiB", 0x1p10},
        {"M", 0x1p20}, {"MiB", 0x1p20}, {"G", 0x1p30}, {"GiB", 0x1p30},
        {"T", 0x1p40}, {"TiB", 0x1p40}, {"P", 0x1p50}, {"PiB", 0x1p50}};
    for (const auto& [name, scale] : units) {
        if (unit != name)
            continue;
        const double bytes = std::floor(value * scale);
        if (!std::isfinite(bytes) || bytes < 1 || bytes > 0x1p62)
            return std::nullopt;
        return static_cast<std::int64_t>(bytes);
    }
    return std::nullopt;
}

int quotaCommand(const std::vector<std::string>& args) {
    po::options_description options("options");
    options.add_options()("email", po::value<std::string>(), "the researcher's e-mail address")(
        "max-bytes", po::value<std::string>(), "bytes one job may upload (e.g. 64GiB)")(
        "max-flops", po::value<double>(), "FLOPs one job may compute (e.g. 1e16)")(
        "max-running-jobs", po::value<std::int64_t>(), "jobs that may run at once");
    po::positional_options_description positional;
    positional.add("email", 1);
    const auto parsed = parseCommand(args, options, positional, kQuotaUsage);
    if (!parsed)
        return 0;
    if (!parsed->count("email"))
        throw std::runtime_error("usage: " + kQuotaUsage.synopsis);
    auto email = normalizeEmail((*parsed)["email"].as<std::string>());
    if (!email)
        throw std::runtime_error(email.error().message);
    const QuotaChange change = changeOf(*parsed);
    NodeStore store(existingDatabase(*parsed));
    const bool changes = change.maxBytes || change.maxFlops || change.maxRunningJobs;
    auto quota = changes ? setQuota(store.database(), *email, change, wallClock())
                         : quotaOfEmail(store.database(), *email);
    if (!quota)
        throw std::runtime_error(quota.error().message);
    std::cout << quotaLine(*email, *quota) << std::endl;
    return 0;
}

} // namespace goblin::labnode
