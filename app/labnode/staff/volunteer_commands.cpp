#include "staff/volunteer_commands.hpp"

#include <iostream>
#include <set>
#include <stdexcept>

#include <boost/json.hpp>

#include "staff/json_output.hpp"
#include "staff/staff_cli.hpp"
#include "store/admission_store.hpp"
#include "store/node_settings.hpp"
#include "store/node_store.hpp"
#include "store/volunteer_bans.hpp"

namespace po = boost::program_options;

namespace goblin::labnode {
namespace {

const CommandUsage kListUsage{
    "goblin-labnode volunteers list --db PATH [--json]",
    "Lists volunteers: id, backend, state, results accepted and rejected. The state is banned,\n"
    "quarantined, approved, open (not approved, working: the node admits every volunteer) or\n"
    "not-approved (given no work: the node admits only approved volunteers). The admission mode\n"
    "is the one of the last `serve` on the database (open before any)."};
const CommandUsage kApproveUsage{
    "goblin-labnode volunteers approve ID --db PATH",
    "Approves a volunteer for a node run with --volunteers approved; a running node gives it\n"
    "work within a few seconds."};
const CommandUsage kShowUsage{"goblin-labnode volunteers show ID --db PATH [--json]",
                              "Shows one volunteer: backend, first and last seen, results, audits "
                              "passed, lease expiries, approval, quarantine and ban."};
const CommandUsage kBanUsage{
    "goblin-labnode volunteers ban ID --reason TEXT --db PATH",
    "Bans a volunteer, recording the time and the reason. A running node acts within a few\n"
    "seconds: it quarantines the volunteer (closes its connections, drops its undecided\n"
    "results, re-queues its tasks, rechecks the results of it that jobs used) and logs it; the\n"
    "volunteer is refused at every hello until unbanned."};
const CommandUsage kUnbanUsage{
    "goblin-labnode volunteers unban ID --db PATH",
    "Lifts a ban: the volunteer is admitted again at its next hello. It does not undo what the\n"
    "ban did (dropped results stay dropped, rechecks stand, its connections are not reopened),\n"
    "nor lift a quarantine the node imposed for a wrong result."};

std::string idArgument(const po::variables_map& options, const CommandUsage& usage) {
    if (!options.count("volunteer")) {
        std::string message = "usage: ";
        message.append(usage.synopsis);
        throw std::runtime_error(message);
    }
    return options["volunteer"].as<std::string>();
}

std::optional<po::variables_map> parseWithId(const std::vector<std::string>& args,
                                             po::options_description options,
                                             const CommandUsage& usage) {
    options.add_options()("volunteer", po::value<std::string>(), "the volunteer's id (v-…)");
    po::positional_options_description positional;
    positional.add("volunteer", 1);
    return parseCommand(args, std::move(options), positional, usage);
}

// The admission mode the last `serve` on the database recorded; open (the default) before any.
std::string admissionMode(Database& db) {
    return nodeSetting(db, kVolunteerPolicySetting).value_or("open");
}

const char* approvalState(bool approved, const std::string& mode) {
    if (approved)
        return "approved";
    return mode == "open" ? "open" : "not-approved";
}

const char* stateOf(const VolunteerListing& volunteer, const std::set<std::string>& banned,
                    const std::string& mode) {
    if (banned.count(volunteer.id) != 0)
        return "banned";
    if (volunteer.quarantined)
        return "quarantined";
    return approvalState(volunteer.approved, mode);
}

int list(const std::vector<std::string>& args) {
    po::options_description options("options");
    addJsonOption(options);
    const auto parsed = parseCommand(args, options, {}, kListUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    std::set<std::string> banned;
    for (const BanRecord& ban : activeBans(store.database()))
        banned.insert(ban.volunteerId);
    const std::string mode = admissionMode(store.database());
    const auto volunteers = listVolunteers(store.database());
    if (wantsJson(*parsed)) {
        boost::json::array rows;
        for (const VolunteerListing& volunteer : volunteers)
            rows.push_back({{"id", volunteer.id},
                            {"backend", volunteer.backend},
                            {"state", stateOf(volunteer, banned, mode)},
                            {"approved", volunteer.approved},
                            {"quarantined", volunteer.quarantined},
                            {"banned", banned.count(volunteer.id) != 0},
                            {"accepted", volunteer.accepted},
                            {"rejected", volunteer.rejected},
                            {"created", jsonTime(volunteer.createdAt)}});
        printJson({{"admission", mode}, {"volunteers", std::move(rows)}});
        return 0;
    }
    std::cout << "ID\tBACKEND\tSTATE\tACCEPTED\tREJECTED\n";
    for (const VolunteerListing& volunteer : volunteers)
        std::cout << volunteer.id << "\t" << (volunteer.backend.empty() ? "-" : volunteer.backend)
                  << "\t" << stateOf(volunteer, banned, mode) << "\t"
                  << groupedNumber(volunteer.accepted) << "\t" << groupedNumber(volunteer.rejected)
                  << "\n";
    std::cout << groupedNumber(static_cast<std::int64_t>(volunteers.size()))
              << (volunteers.size() == 1 ? " volunteer" : " volunteers") << " (admission: " << mode
              << ")" << std::endl;
    return 0;
}

std::string approvalText(const VolunteerDetail& detail, const std::string& mode) {
    if (detail.approved)
        return "yes";
    if (mode == "open")
        return "not needed (open mode: the node admits every volunteer)";
    return "no (the node admits only approved volunteers)";
}

boost::json::object detailJson(const VolunteerDetail& detail, const std::string& mode) {
    boost::json::object out{{"id", detail.id},
                            {"backend", detail.backend},
                            {"first_seen", jsonTime(detail.createdAt)},
                            {"last_seen", jsonTime(detail.lastSeen)},
                            {"accepted", detail.accepted},
                            {"rejected", detail.rejected},
                            {"audits_passed", detail.auditsPassed},
                            {"lease_expiries", detail.expiries},
                            {"admission", mode},
                            {"approved", detail.approved},
                            {"state", approvalState(detail.approved, mode)},
                            {"quarantined", nullptr},
                            {"banned", nullptr},
                            {"ban_lifted", jsonTime(detail.banLiftedAt)}};
    if (detail.quarantinedAt) {
        out["quarantined"] = {{"at", jsonTime(*detail.quarantinedAt)},
                              {"reason", detail.quarantineReason}};
        out["state"] = "quarantined";
    }
    if (detail.ban) {
        out["banned"] = {{"at", jsonTime(detail.ban->bannedAt)}, {"reason", detail.ban->reason}};
        out["state"] = "banned";
    }
    return out;
}

void printDetail(const VolunteerDetail& detail, const std::string& mode) {
    std::cout << "volunteer      " << detail.id << "\n"
              << "backend        " << (detail.backend.empty() ? "-" : detail.backend) << "\n"
              << "first seen     " << utcTime(detail.createdAt) << "\n"
              << "last seen      " << utcTime(detail.lastSeen) << "\n"
              << "results        " << groupedNumber(detail.accepted) << " accepted, "
              << groupedNumber(detail.rejected) << " rejected\n"
              << "audits passed  " << groupedNumber(detail.auditsPassed) << "\n"
              << "lease expiries " << groupedNumber(detail.expiries) << "\n"
              << "approved       " << approvalText(detail, mode) << "\n";
    if (detail.quarantinedAt)
        std::cout << "quarantined    " << utcTime(*detail.quarantinedAt) << ": "
                  << detail.quarantineReason << "\n";
    if (detail.ban)
        std::cout << "banned         " << utcTime(detail.ban->bannedAt) << ": "
                  << detail.ban->reason << "\n";
    else if (detail.banLiftedAt > 0)
        std::cout << "ban lifted     " << utcTime(detail.banLiftedAt) << "\n";
}

int show(const std::vector<std::string>& args) {
    po::options_description options("options");
    addJsonOption(options);
    const auto parsed = parseWithId(args, options, kShowUsage);
    if (!parsed)
        return 0;
    const std::string id = idArgument(*parsed, kShowUsage);
    NodeStore store(existingDatabase(*parsed));
    const auto detail = volunteerDetail(store.database(), id);
    if (!detail) {
        std::string message = "no volunteer registered as ";
        message.append(id);
        throw std::runtime_error(message);
    }
    const std::string mode = admissionMode(store.database());
    if (wantsJson(*parsed))
        printJson(detailJson(*detail, mode));
    else
        printDetail(*detail, mode);
    return 0;
}

int ban(const std::vector<std::string>& args) {
    po::options_description options("options");
    options.add_options()("reason", po::value<std::string>(),
                          "why (kept with the ban, logged by the node)");
    const auto parsed = parseWithId(args, options, kBanUsage);
    if (!parsed)
        return 0;
    const std::string id = idArgument(*parsed, kBanUsage);
    if (!parsed->count("reason") || (*parsed)["reason"].as<std::string>().empty())
        throw std::runtime_error("--reason TEXT is required: it is kept with the ban");
    const std::string reason = (*parsed)["reason"].as<std::string>();
    NodeStore store(existingDatabase(*parsed));
    if (auto ok = banVolunteer(store.database(), id, reason, wallClock()); !ok)
        throw std::runtime_error(ok.error().message);
    std::cout << "banned " << id << " (a running node disconnects it within a few seconds)"
              << std::endl;
    return 0;
}

int unban(const std::vector<std::string>& args) {
    const auto parsed = parseWithId(args, po::options_description("options"), kUnbanUsage);
    if (!parsed)
        return 0;
    const std::string id = idArgument(*parsed, kUnbanUsage);
    NodeStore store(existingDatabase(*parsed));
    if (auto ok = unbanVolunteer(store.database(), id, wallClock()); !ok)
        throw std::runtime_error(ok.error().message);
    std::cout << "unbanned " << id << std::endl;
    return 0;
}

int approve(const std::vector<std::string>& args) {
    const auto parsed = parseWithId(args, po::options_description("options"), kApproveUsage);
    if (!parsed)
        return 0;
    const std::string id = idArgument(*parsed, kApproveUsage);
    NodeStore store(existingDatabase(*parsed));
    if (auto ok = approveVolunteer(store.database(), id, wallClock()); !ok)
        throw std::runtime_error(ok.error().message);
    std::cout << "approved " << id << std::endl;
    return 0;
}

} // namespace

int volunteerCommand(const std::vector<std::string>& args) {
    return runStaffAction(args, "volunteers",
                          {{"list", &kListUsage, list},
                           {"show", &kShowUsage, show},
                           {"approve", &kApproveUsage, approve},
                           {"ban", &kBanUsage, ban},
                           {"unban", &kUnbanUsage, unban}});
}

} // namespace goblin::labnode
