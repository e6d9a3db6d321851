#include "tile_verifier.hpp"

#include <chrono>

namespace goblin::labnode {

void verifyAndMerge(const TileCheck& check, const core::Tensor& tile, const BlobStore& blobs,
                    VerdictRecord& result) {
    const auto started = std::chrono::steady_clock::now();
    verify::MatmulCheckReport report;
    if (tile.shape().size() != 2)
        report.reason = "the result is not a 2-D tile";
    else
        report = verify::checkMatmulTileWithProbe(check.a, check.b, core::viewOf(tile),
                                                  *check.probes->probeFor(check.col0, check.b));
    result.verifySeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.accepted = report.verdict == verify::Verdict::Accepted;
    result.ratio = report.maxErrorRatio;
    result.residual = report.residual;
    result.bound = report.bound;
    result.reason = report.reason;
    if (!result.accepted)
        return;
    // Merge before the verdict commits: a crash in between only means the tile is computed again.
    if (auto ok = blobs.writeTile(check.jobId, tile, check.row0, check.col0, check.resultCols);
        !ok) {
        result.accepted = false;
        result.reason = "the node could not write the tile: " + ok.error().message;
    }
}

TileCheck makeTileCheck(const RunningJob& job, const TileTask& task) {
    TileCheck check;
    check.jobId = job.record.id;
    check.a = core::subView(job.aView(), task.row0, task.rows, 0, job.record.k);
    check.b = core::subView(job.bView(), 0, job.record.k, task.col0, task.cols);
    check.keepA = job.a;
    check.keepB = job.b;
    check.row0 = task.row0;
    check.col0 = task.col0;
    check.resultCols = job.record.n;
    check.probes = job.probes;
    return check;
}

bool isTinyTile(const TileCheck& check) {
    return check.a.rows * check.a.cols + check.b.rows * check.b.cols <= kTinyTileElements;
}

} // namespace goblin::labnode
