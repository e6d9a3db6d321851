#include "kinds/matmul/tile_node_compute.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace goblin::labnode {

namespace {

template <class T> double element(const core::MatrixView& view, std::int64_t i, std::int64_t j) {
    return static_cast<double>(view.row<T>(i)[j]);
}

template <class T>
void multiply(const core::MatrixView& a, const core::MatrixView& b, core::Tensor& c) {
    std::vector<double> row(static_cast<std::size_t>(b.cols));
    auto out = c.values<T>();
    for (std::int64_t i = 0; i < a.rows; ++i) {
        std::fill(row.begin(), row.end(), 0.0);
        // i-p-j order: B's rows are read contiguously.
        for (std::int64_t p = 0; p < a.cols; ++p) {
            const double left = element<T>(a, i, p);
            const T* right = b.row<T>(p);
            for (std::int64_t j = 0; j < b.cols; ++j)
                row[static_cast<std::size_t>(j)] += left * static_cast<double>(right[j]);
        }
        for (std::int64_t j = 0; j < b.cols; ++j)
            out[static_cast<std::size_t>(i * b.cols + j)] =
                static_cast<T>(row[static_cast<std::size_t>(j)]);
    }
}

} // namespace

Expected<core::Tensor> computeTileOnNode(const core::MatrixView& a, const core::MatrixView& b) {
    if (a.cols != b.rows || a.dtype != b.dtype)
        return makeError(ErrorCode::Internal, "the tile's inputs do not multiply");
    auto c = core::Tensor::allocate(a.dtype, {a.rows, b.cols});
    if (!c)
        return c;
    switch (a.dtype) {
    case core::DType::F32:
        multiply<float>(a, b, *c);
        return c;
    case core::DType::F64:
        multiply<double>(a, b, *c);
        return c;
    default:
        return makeError(ErrorCode::UnsupportedDtype, "the node computes f32 and f64 tiles only");
    }
}

std::shared_ptr<const core::Tensor>
computeAndMergeOnNode(const TileCheck& check, const BlobStore& blobs, VerdictRecord& verdict) {
    const auto started = std::chrono::steady_clock::now();
    verdict.attempt = 0; // no lease: attempt numbers of volunteers start at 1
    verdict.volunteerId = "node";
    verdict.backend = "node-f64";
    verdict.method = "node-compute";
    verdict.ratio = 0;
    verdict.residual = 0;
    verdict.bound = 0;
    auto tile = computeTileOnNode(check.a, check.b);
    verdict.accepted = tile.has_value();
    if (!tile) {
        verdict.reason =
            std::string("the node could not compute the tile: ").append(tile.error().message);
    } else if (auto ok =
                   blobs.writeTile(check.jobId, *tile, check.row0, check.col0, check.resultCols);
               !ok) {
        verdict.accepted = false;
        verdict.reason =
            std::string("the node could not write the tile: ").append(ok.error().message);
    }
    verdict.computeSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!verdict.accepted)
        return nullptr;
    return std::make_shared<const core::Tensor>(std::move(*tile));
}

} // namespace goblin::labnode
