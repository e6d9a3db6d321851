// Makes the scheduler's RunningJobs: a new job written to the database in one transaction (with its
// tasks and its result file), or a running job reloaded from the database after a restart.
// Called on the core thread (it uses the NodeStore).
#pragma once

#include <memory>
#include <vector>

#include "goblin/plan/tile_planner.hpp"
#include "kinds/matmul/column_probe_cache.hpp"
#include "kinds/matmul/job_book.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode {

struct LoadedJob {
    RunningJob job;
    std::vector<PlannedTile> tasks;
};

// Maps the input blobs, creates the result file and inserts the job and one task per tile.
Expected<LoadedJob> createJob(NodeStore& store, const BlobStore& blobs, JobRecord record,
                              const plan::TilePlan& plan, std::shared_ptr<ColumnProbeCache> probes);

// Maps the blobs of a job left running and rebuilds its tasks: accepted tiles stay accepted,
// every other task is queued again.
Expected<LoadedJob> reloadJob(NodeStore& store, const BlobStore& blobs, JobRecord record,
                              std::shared_ptr<ColumnProbeCache> probes);

} // namespace goblin::labnode
