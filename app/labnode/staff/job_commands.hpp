// `goblin-labnode jobs list|show|cancel|purge` and `status`: what lab staff see of the jobs and the
// node in its database (researchers' e-mails, states and counts; never research data).
#pragma once

#include <string>
#include <vector>

namespace goblin::labnode {

// args: the words after "jobs" (the action first). Returns the exit code.
int jobCommand(const std::vector<std::string>& args);
// args: the words after "status".
int statusCommand(const std::vector<std::string>& args);

} // namespace goblin::labnode
