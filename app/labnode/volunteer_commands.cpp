#include "volunteer_commands.hpp"

#include <iostream>
#include <stdexcept>

#include "admission_store.hpp"
#include "node_store.hpp"
#include "staff_cli.hpp"

namespace po = boost::program_options;

namespace goblin::labnode {
namespace {

const CommandUsage kListUsage{"goblin-labnode volunteers list --db PATH",
                              "Lists volunteers: id, backend, state (approved, not-approved, "
                              "quarantined, banned), results accepted and rejected."};
const CommandUsage kApproveUsage{
    "goblin-labnode volunteers approve ID --db PATH",
    "Approves a volunteer for a node run with --volunteers approved; a running node gives it\n"
    "work within a few seconds."};

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

const char* stateOf(const VolunteerListing& volunteer) {
    if (volunteer.quarantined)
        return "quarantined";
    return volunteer.approved ? "approved" : "not-approved";
}

int list(const std::vector<std::string>& args) {
    const auto parsed = parseCommand(args, po::options_description("options"), {}, kListUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    const auto volunteers = listVolunteers(store.database());
    for (const VolunteerListing& volunteer : volunteers)
        std::cout << volunteer.id << "\t" << (volunteer.backend.empty() ? "-" : volunteer.backend)
                  << "\t" << stateOf(volunteer) << "\taccepted=" << volunteer.accepted
                  << "\trejected=" << volunteer.rejected << "\n";
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
    const std::string action = args.empty() ? std::string() : args.front();
    const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    if (action == "list")
        return list(rest);
    if (action == "approve")
        return approve(rest);
    if (action == "--help" || action == "-h") {
        std::cout << "usage:\n";
        for (const CommandUsage* usage : {&kListUsage, &kApproveUsage})
            std::cout << "  " << usage->synopsis << "\n";
        std::cout << "(--help after an action for its options)\n";
        return 0;
    }
    throw std::runtime_error("usage: goblin-labnode volunteers list|approve ... --db PATH "
                             "(--help for more)");
}

} // namespace goblin::labnode
