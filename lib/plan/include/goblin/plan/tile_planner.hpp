// The planner: splits C = A·B (m×k · k×n) into C tiles sized to what volunteers advertised.
// Pure function; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::plan {

struct TileRect {
    std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
};

struct PlanningInput {
    std::int64_t m = 0, k = 0, n = 0;
    core::DType dtype = core::DType::F32;
    int volunteers = 0;                                                 // connected now
    std::int64_t smallestVolunteerMemory = 0;                           // bytes; 0 when unknown
    std::optional<std::pair<std::int64_t, std::int64_t>> requestedTile; // researcher's (rows, cols)
    std::int64_t maxTiles = 1'000'000;
    std::int64_t maxTensorBytes = std::int64_t{1} << 30;
    // What the node builds for one task frame (the tile's A rows and B columns, copied from the
    // mapped blobs): with a few frames in flight per volunteer this bounds the node's memory
    // however large A and B are (a matrix in row blocks may be many GiB).
    std::int64_t maxFrameBytes = std::int64_t{128} << 20;
};

struct TilePlan {
    std::int64_t tileRows = 0, tileCols = 0;
    std::vector<TileRect> tiles;
};

// Aims for about two tiles per volunteer (so each keeps one in flight while computing another),
// then shrinks tiles until one tile's inputs and output fit in a quarter of the smallest
// volunteer's memory, under the tensor limit and the node's frame budget. A requested tile size
// wins, clamped to the matrix.
Expected<TilePlan> planTiles(const PlanningInput& input);

} // namespace goblin::plan
