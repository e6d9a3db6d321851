// `goblin-labnode requests list|show|approve|refuse`: lab staff read researchers' access requests
// (made on the node's /access pages) and decide them. Short-lived staff process, own connection.
#pragma once

#include <string>
#include <vector>

namespace goblin::labnode::access {

// args: the words after "requests" (the action first). Returns the exit code.
int requestCommand(const std::vector<std::string>& args);

} // namespace goblin::labnode::access
