// The goblin-volunteer command line: its options, parsing (a negative number may follow an
// option, so "--threads -1" is refused by its range check rather than read as an option) and
// the range check of every numeric option. Used once, by main.
#pragma once

#include <cstdint>
#include <stdexcept>

#include <boost/program_options.hpp>

namespace goblin::volunteer {

// A bad command line: main prints the message and exits with kUsageExit.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
constexpr int kUsageExit = 2;

boost::program_options::options_description volunteerOptions();

// Throws UsageError, naming the option, for an unknown option or a value of the wrong type.
boost::program_options::variables_map
parseVolunteerArgs(int argc, char** argv,
                   const boost::program_options::options_description& options);

// What the ranges depend on.
struct HostLimits {
    int hardwareThreads = 1;
    std::int64_t totalMemoryMiB = 0; // 0: unknown (no upper bound on --memory-mb)
};

// Throws UsageError naming the first option out of range, its range and the value given.
void checkVolunteerArgs(const boost::program_options::variables_map& args, const HostLimits& host);

} // namespace goblin::volunteer
