#include "kinds/matmul/tile_verifier.hpp"

#include <chrono>
#include <limits>

namespace goblin::labnode {
namespace {

// Freivalds first; a grey-zone tile is decided exactly, here on the same worker (tiny tiles on the
// core thread, where the exact check is as cheap as the tile).
verify::MatmulCheckReport checkTile(const TileCheck& check, const core::Tensor& tile,
                                    VerdictRecord& result) {
    if (tile.shape().size() != 2) {
        verify::MatmulCheckReport report;
        report.maxErrorRatio = std::numeric_limits<double>::infinity(); // as for any bad shape
        report.reason = "the result is not a 2-D tile";
        return report;
    }
    const core::MatrixView c = core::viewOf(tile);
    auto report = verify::checkMatmulTileWithProbe(
        check.a, check.b, c, *check.probes->probeFor(check.col0, check.b, check.keepB.get()));
    if (report.verdict != verify::Verdict::Escalate)
        return report;
    result.method = "freivalds-escalated";
    return verify::checkMatmulTileExactly(check.a, check.b, c);
}

} // namespace

void verifyAndMerge(const TileCheck& check, const core::Tensor& tile, const BlobStore& blobs,
                    VerdictRecord& result) {
    const auto started = std::chrono::steady_clock::now();
    const verify::MatmulCheckReport report = checkTile(check, tile, result);
    if (check.keepA)
        check.keepA->release(check.a);
    if (check.keepB)
        check.keepB->release(check.b);
    result.verifySeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.accepted = report.verdict == verify::Verdict::Accepted;
    result.ratio = report.maxErrorRatio;
    result.threshold = report.threshold;
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
