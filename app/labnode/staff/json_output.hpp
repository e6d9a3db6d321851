// `--json` on the staff commands' lists and shows: one JSON document on stdout for scripts, times
// as ISO 8601 UTC text ("2026-12-01T14:50:07Z", null when unset). Main thread of a staff command.
#pragma once

#include <boost/json/value.hpp>
#include <boost/program_options.hpp>

namespace goblin::labnode {

// Adds the --json switch to a command's options.
void addJsonOption(boost::program_options::options_description& options);
bool wantsJson(const boost::program_options::variables_map& options);
boost::json::value jsonTime(double secondsSinceEpoch); // null for 0 or less
// Prints `document` on stdout as one line of JSON.
void printJson(const boost::json::value& document);

} // namespace goblin::labnode
