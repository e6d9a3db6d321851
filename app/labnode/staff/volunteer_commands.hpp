// `goblin-labnode volunteers list|show|approve|ban|unban` (and the older `volunteer list|approve`):
// lab staff look at and act on volunteers in the database a node serves; a running node reads
// approvals and bans from it every two seconds.
#pragma once

#include <string>
#include <vector>

namespace goblin::labnode {

// args: the words after "volunteer" or "volunteers" (the action first). Returns the exit code.
int volunteerCommand(const std::vector<std::string>& args);

} // namespace goblin::labnode
