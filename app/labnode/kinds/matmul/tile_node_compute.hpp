// The node computes a tile itself when volunteers gave up on it (its lease expired too often, or
// every connected volunteer let it expire): the product in float64, rounded once to the job's
// dtype, merged into the result file like an accepted tile. Runs on a worker thread; it touches
// only the views and files it is given.
#pragma once

#include "goblin/core/tensor.hpp"
#include "kinds/matmul/tile_verifier.hpp"
#include "store/blob_store.hpp"
#include "work/verdict.hpp"

namespace goblin::labnode {

// C = A·B of the check's views, accumulated in float64 and rounded to their dtype (f32, f64).
Expected<core::Tensor> computeTileOnNode(const core::MatrixView& a, const core::MatrixView& b);

// Computes the tile of `check` and merges it; fills `verdict` (method "node-compute", volunteer
// "node", attempt 0: no lease, accepted unless the computation or the write failed). Returns the
// merged tile (null when not accepted).
std::shared_ptr<const core::Tensor>
computeAndMergeOnNode(const TileCheck& check, const BlobStore& blobs, VerdictRecord& verdict);

} // namespace goblin::labnode
