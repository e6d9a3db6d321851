// `goblin-labnode researcher add` and `researchers list|revoke`: lab staff manage researchers'
// credentials on the database a node serves (the node reads them at each researcher's hello).
#pragma once

#include <string>
#include <vector>

namespace goblin::labnode {

// args: the words after "researcher" or "researchers" (the action first). Returns the exit code.
int researcherCommand(const std::vector<std::string>& args);

} // namespace goblin::labnode
