// Transitional, for tests/labnode/test_graph_tasks.cpp only (its owner renames it): the reference
// executor moved to goblin/reference/graph_executor.hpp, namespace goblin::reference. Delete this
// folder and its line in tests/CMakeLists.txt once that test includes the new header.
#pragma once

#include "goblin/reference/graph_executor.hpp"

namespace goblin::compute {
namespace reference = ::goblin::reference;
} // namespace goblin::compute
