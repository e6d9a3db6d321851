// Verifies a returned C tile against the job's inputs (Freivalds per column block; a grey-zone tile
// is decided by the exact check, method "freivalds-escalated") and, when it passes, merges it into
// the job's result file. Runs on a worker thread (or inline on the core thread for tiny tiles); it
// touches only the views and files it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "goblin/core/tensor.hpp"
#include "goblin/verify/matmul_check.hpp"
#include "kinds/matmul/job_book.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"
#include "work/verdict.hpp"

namespace goblin::labnode {

struct TileCheck {
    std::string jobId;
    core::MatrixView a; // the tile's rows of A (views into the mapped blob below)
    core::MatrixView b; // the tile's columns of B
    std::shared_ptr<MappedFile> keepA, keepB;
    std::int64_t row0 = 0, col0 = 0, resultCols = 0;
    std::shared_ptr<ColumnProbeCache> probes;
};

// What a worker needs to check the result of `task`: views of its A rows and B columns (the
// mappings are kept alive) and where the tile goes in the result.
TileCheck makeTileCheck(const RunningJob& job, const TileTask& task);

// Fills the verdict fields of `verdict` (accepted, method when escalated, element error ratio and
// its threshold, residual, bound, reason, time).
void verifyAndMerge(const TileCheck& check, const core::Tensor& tile, const BlobStore& blobs,
                    VerdictRecord& verdict);

// Tiles this small (A rows plus B columns, in elements) are checked and framed on the core thread:
// a thread hop would cost more than the work.
inline constexpr std::int64_t kTinyTileElements = std::int64_t{1} << 14;
bool isTinyTile(const TileCheck& check);

} // namespace goblin::labnode
