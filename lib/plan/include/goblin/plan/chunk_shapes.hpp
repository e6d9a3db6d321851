// Captured programs bake the batch size into reshape and expand targets (static shapes). For a
// chunk of `rows` of the batch's `fullBatch`, each such target is adapted to the chunk by
// following where the batch rows are: a value's rows dim is the dim where its chunk shape differs
// from its shape in the whole graph, and a reshape records where in a merged dim the rows sit
// (outer · B · inner). A reshape's rows go to the target dim that spans the input's rows dim or
// lies within it and holds all its rows — so [B, L, D] → [B·L, D] → [B, L, D] and
// [B, H, L, E] → [B·H, L, E] → [B, H, L, E] are adapted whatever other dims equal B; an expand
// keeps the input's rows dim. Only a target whose input's rows are unknown (a constant broadcast
// to the batch) is adapted by its dims equal to the batch, and only when exactly one of them makes
// the op's shapes fit: an ambiguous target is refused, never guessed. Pure; any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"

namespace goblin::plan {

// `graph` is the chunk's (its marked inputs already cut to `rows`); `whole` the validated plan of
// the whole graph.
Expected<void> adaptShapeTargets(core::graph::Graph& graph, const core::graph::GraphPlan& whole,
                                 std::int64_t fullBatch, std::int64_t rows);

} // namespace goblin::plan
