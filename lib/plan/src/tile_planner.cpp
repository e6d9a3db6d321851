#include "goblin/plan/tile_planner.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace goblin::plan {
namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

// Bytes a volunteer holds for one tile: its A rows, its B columns and its C tile.
std::int64_t tileBytes(const PlanningInput& in, std::int64_t rows, std::int64_t cols) {
    const auto item = static_cast<std::int64_t>(core::itemSize(in.dtype));
    return (rows * in.k + in.k * cols + rows * cols) * item;
}

// Bytes the node copies into one task frame: the tile's A rows and B columns.
std::int64_t frameBytes(const PlanningInput& in, std::int64_t rows, std::int64_t cols) {
    return (rows * in.k + in.k * cols) * static_cast<std::int64_t>(core::itemSize(in.dtype));
}

std::int64_t largestTensorBytes(const PlanningInput& in, std::int64_t rows, std::int64_t cols) {
    const auto item = static_cast<std::int64_t>(core::itemSize(in.dtype));
    return std::max({rows * in.k, in.k * cols, rows * cols}) * item;
}

} // namespace

Expected<TilePlan> planTiles(const PlanningInput& in) {
    if (in.m < 1 || in.k < 1 || in.n < 1)
        return makeError(ErrorCode::ShapeMismatch, "matrix dimensions must be at least 1");
    TilePlan plan;
    if (in.requestedTile) {
        plan.tileRows = std::clamp<std::int64_t>(in.requestedTile->first, 1, in.m);
        plan.tileCols = std::clamp<std::int64_t>(in.requestedTile->second, 1, in.n);
    } else {
        const int wanted = std::max(1, 2 * in.volunteers);
        auto gridRows = static_cast<std::int64_t>(std::ceil(std::sqrt(double(wanted))));
        std::int64_t gridCols = ceilDiv(wanted, gridRows);
        gridRows = std::min(gridRows, in.m);
        gridCols = std::min(gridCols, in.n);
        const std::int64_t memory =
            in.smallestVolunteerMemory > 0 ? in.smallestVolunteerMemory : (std::int64_t{1} << 31);
        const std::int64_t budget = memory / 4;
        plan.tileRows = ceilDiv(in.m, gridRows);
        plan.tileCols = ceilDiv(in.n, gridCols);
        while ((tileBytes(in, plan.tileRows, plan.tileCols) > budget ||
                largestTensorBytes(in, plan.tileRows, plan.tileCols) > in.maxTensorBytes ||
                frameBytes(in, plan.tileRows, plan.tileCols) > in.maxFrameBytes) &&
               (plan.tileRows > 1 || plan.tileCols > 1)) {
            if (plan.tileRows >= plan.tileCols)
                plan.tileRows = ceilDiv(plan.tileRows, 2);
            else
                plan.tileCols = ceilDiv(plan.tileCols, 2);
        }
    }
    if (largestTensorBytes(in, plan.tileRows, plan.tileCols) > in.maxTensorBytes)
        return makeError(
            ErrorCode::LimitExceeded,
            "one tile's inputs are over the tensor limit even at 1×1 tiles (inner size " +
                std::to_string(in.k) + " is too large)");
    const std::int64_t count = ceilDiv(in.m, plan.tileRows) * ceilDiv(in.n, plan.tileCols);
    if (count > in.maxTiles)
        return makeError(ErrorCode::LimitExceeded, "the job would have " + std::to_string(count) +
                                                       " tiles; the limit is " +
                                                       std::to_string(in.maxTiles));
    plan.tiles.reserve(static_cast<std::size_t>(count));
    for (std::int64_t row0 = 0; row0 < in.m; row0 += plan.tileRows) {
        for (std::int64_t col0 = 0; col0 < in.n; col0 += plan.tileCols) {
            plan.tiles.push_back(TileRect{row0, col0, std::min(plan.tileRows, in.m - row0),
                                          std::min(plan.tileCols, in.n - col0)});
        }
    }
    return plan;
}

} // namespace goblin::plan
