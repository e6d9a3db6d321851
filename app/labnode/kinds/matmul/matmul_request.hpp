// The researcher side of a matmul job: validating submit_matmul, taking in an input (NaN/Inf
// refused, then stored as a blob), and the JSON the node answers with. Pure functions apart from
// storeFiniteInput, which writes a blob; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/limits.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode {

using TileRequest = std::optional<std::pair<std::int64_t, std::int64_t>>;

// Shape and dtype rules of submit_matmul (2-D, both f32 or both f64, inner sizes equal, no empty
// dimension), for A and B received whole or staged. Values are checked by storeFiniteInput.
Expected<void> checkMatmulShapes(core::DType aType, core::DType bType, const core::Shape& a,
                                 const core::Shape& b);
// Refuses NaN/Inf (verification needs finite inputs), then stores the input as a blob.
Expected<std::string> storeFiniteInput(const char* name, const core::Tensor& input,
                                       const BlobStore& blobs);

boost::json::array shapeJson(std::int64_t rows, std::int64_t cols);
// The summary that travels with job_done (docs/protocol.md).
boost::json::object summaryJson(const JobRecord& job, const JobSummaryCounts& counts, double now);

} // namespace goblin::labnode
