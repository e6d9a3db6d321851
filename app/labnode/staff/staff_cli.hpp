// What every staff sub-command of goblin-labnode shares: parsing with `--help` on stdout, `--db`
// that must name an existing database (`init` creates one), and numbers and times printed as
// people write them. Used by the command files on the main thread of a short-lived process.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "staff/human_format.hpp"

namespace goblin::labnode {

struct CommandUsage {
    std::string synopsis;    // "goblin-labnode researchers revoke EMAIL --db PATH"
    std::string description; // a few lines on what it does (and does not)
};

// Parses `args` (after the sub-command's words) with `options` plus --help and --db. Prints the
// usage on stdout and returns nullopt for --help; throws std::runtime_error for bad options.
std::optional<boost::program_options::variables_map>
parseCommand(const std::vector<std::string>& args,
             boost::program_options::options_description options,
             const boost::program_options::positional_options_description& positional,
             const CommandUsage& usage);

// The --db value; throws unless the file exists (the message names the path and `init`).
std::string existingDatabase(const boost::program_options::variables_map& options);

double wallClock();

// One action of a staff command group ("jobs cancel"): its usage and what runs it.
struct StaffAction {
    std::string name;
    const CommandUsage* usage;
    std::function<int(const std::vector<std::string>& rest)> run;
};

// Runs the action `args[0]` names with the words after it. `--help` (or -h) lists every action's
// synopsis on stdout; no action or an unknown one throws the group's one-line usage.
int runStaffAction(const std::vector<std::string>& args, const std::string& group,
                   const std::vector<StaffAction>& actions);

} // namespace goblin::labnode
