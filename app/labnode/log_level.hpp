// The level of a node log line (`serve`'s stdout: "<UTC time> <level> <message>"): error for what
// the node could not do, warning for what a lab should look at (rejected results, quarantines,
// bans, refusals, failed jobs, expired leases, jobs nothing computes), info for the rest. Decided
// from the message, so every role keeps logging plain lines. Pure function; any thread.
#pragma once

#include <string_view>

namespace goblin::labnode {

enum class LogLevel { Info, Warning, Error };

LogLevel logLevelOf(std::string_view line);
std::string_view logLevelName(LogLevel level); // "info", "warning", "error"

} // namespace goblin::labnode
