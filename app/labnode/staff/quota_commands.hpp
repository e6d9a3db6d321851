// `goblin-labnode researchers quota EMAIL [--max-bytes B] [--max-flops F] [--max-running-jobs N]`:
// lab staff show or set a researcher's quota (store/researcher_quotas) on the database a node
// serves; the node reads it at the researcher's next check_quota or submit. Main thread of a staff
// command.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "staff/staff_cli.hpp"

namespace goblin::labnode {

extern const CommandUsage kQuotaUsage;

// args: the words after "researchers quota". Returns the exit code; throws std::runtime_error
// with a one-line message for a bad option or an unknown researcher.
int quotaCommand(const std::vector<std::string>& args);

// "68719476736", "64GiB", "64G", "512 MiB" → bytes; nullopt when it is not a size ≥ 1 that fits.
std::optional<std::int64_t> parseByteSize(const std::string& text);

} // namespace goblin::labnode
