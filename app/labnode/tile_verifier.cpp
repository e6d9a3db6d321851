#include "tile_verifier.hpp"

#include <chrono>

namespace goblin::labnode {

void verifyAndMerge(const TileCheck& check, const core::Tensor& tile, const BlobStore& blobs,
                    ResultRecord& result) {
    const auto started = std::chrono::steady_clock::now();
    verify::MatmulCheckReport report;
    if (tile.shape().size() != 2)
        report.reason = "the result is not a 2-D tile";
    else
        report = verify::checkMatmulTile(check.a, check.b, core::viewOf(tile), check.options);
    result.verifySeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.accepted = report.verdict == verify::Verdict::Accepted;
    result.errorRatio = report.maxErrorRatio;
    result.residual = report.residual;
    result.bound = report.bound;
    result.reason = report.reason;
    if (!result.accepted)
        return;
    // Merge before the verdict commits: a crash in between only means the tile is computed again.
    if (auto ok = blobs.writeTile(check.jobId, tile, check.row0, check.col0, check.resultCols); !ok) {
        result.accepted = false;
        result.reason = "the node could not write the tile: " + ok.error().message;
    }
}

bool isTinyTile(const TileCheck& check) {
    constexpr std::int64_t kTinyElements = 1 << 14;
    return check.a.rows * check.a.cols + check.b.rows * check.b.cols <= kTinyElements;
}

} // namespace goblin::labnode
