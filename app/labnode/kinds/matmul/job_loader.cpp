#include "kinds/matmul/job_loader.hpp"

#include "store/database.hpp"

namespace goblin::labnode {
namespace {

// Maps A and B and makes sure the result file exists at full size.
Expected<LoadedJob> openJobFiles(const BlobStore& blobs, JobRecord record,
                                 std::shared_ptr<ColumnProbeCache> probes) {
    auto a = blobs.map(record.aBlob);
    if (!a)
        return tl::unexpected(a.error());
    auto b = blobs.map(record.bBlob);
    if (!b)
        return tl::unexpected(b.error());
    const auto resultBytes =
        static_cast<std::size_t>(record.m * record.n) * core::itemSize(record.dtype);
    if (auto ok = blobs.createResult(record.id, resultBytes); !ok)
        return tl::unexpected(ok.error());
    LoadedJob loaded;
    loaded.job = RunningJob{std::move(record), *a, *b, std::move(probes)};
    return loaded;
}

TileTask taskOf(const std::string& jobId, std::int64_t id, const plan::TileRect& rect) {
    TileTask task;
    task.id = id;
    task.jobId = jobId;
    task.row0 = rect.row0;
    task.col0 = rect.col0;
    task.rows = rect.rows;
    task.cols = rect.cols;
    return task;
}

} // namespace

Expected<LoadedJob> createJob(NodeStore& store, const BlobStore& blobs, JobRecord record,
                              const plan::TilePlan& plan,
                              std::shared_ptr<ColumnProbeCache> probes) {
    auto loaded = openJobFiles(blobs, std::move(record), std::move(probes));
    if (!loaded)
        return loaded;
    const JobRecord& job = loaded->job.record;
    loaded->tasks.reserve(plan.tiles.size());
    auto transaction = Transaction::begin(store.database());
    if (!transaction)
        return tl::unexpected(transaction.error());
    if (auto ok = store.insertJob(job); !ok)
        return tl::unexpected(ok.error());
    for (const plan::TileRect& rect : plan.tiles) {
        auto taskId =
            store.insertTask(job.id, TileRecord{0, rect.row0, rect.col0, rect.rows, rect.cols});
        if (!taskId)
            return tl::unexpected(taskId.error());
        loaded->tasks.push_back(PlannedTile{taskOf(job.id, *taskId, rect)});
    }
    if (auto ok = transaction->commit(); !ok)
        return tl::unexpected(ok.error());
    return loaded;
}

Expected<LoadedJob> reloadJob(NodeStore& store, const BlobStore& blobs, JobRecord record,
                              std::shared_ptr<ColumnProbeCache> probes) {
    auto loaded = openJobFiles(blobs, std::move(record), std::move(probes));
    if (!loaded)
        return loaded;
    const std::string& jobId = loaded->job.record.id;
    for (const TileRecord& tile : store.tilesOf(jobId)) {
        PlannedTile planned{
            taskOf(jobId, tile.taskId, plan::TileRect{tile.row0, tile.col0, tile.rows, tile.cols}),
            tile.attempt, tile.accepted};
        loaded->tasks.push_back(std::move(planned));
    }
    return loaded;
}

} // namespace goblin::labnode
