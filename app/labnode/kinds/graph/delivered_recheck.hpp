// The node's recomputation of a delivered graph job's suspect tasks (those whose outputs rest on
// the agreement of volunteers, one of whom was quarantined afterwards), and the job's outputs as
// they are now, merged again from the stored task outputs. Reads blobs and runs the CPU
// reference: call on a worker; pure apart from the blob store (thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/job_audit_store.hpp"
#include "store/blob_store.hpp"

namespace goblin::labnode {

struct TaskRecheck {
    std::int64_t taskId = 0;
    bool stands = true;        // the stored outputs agree with the node's
    std::string storedOutputs; // the node's outputs, stored as blobs, when they do not
    std::string reason;        // how they differ
    // Computed again because a stage it reads was corrected: its volunteers computed what they
    // were given, so their verdicts stand whatever its outputs become.
    bool inputsReplaced = false;
};

struct JobRecheck {
    std::vector<TaskRecheck> tasks;
    double seconds = 0;
};

// Whether the blobs a job needs for a recomputation (its inputs and stored task outputs) are all
// still there.
bool jobDataKept(const GraphJobRow& job, const std::vector<GraphTaskRow>& tasks,
                 const BlobStore& blobs);

// The suspects, and every stage that reads a task this corrects, in chunk order. `tasks` are
// the job's rows in chunk order.
Expected<JobRecheck> recheckDeliveredTasks(const GraphJobRow& job,
                                           const std::vector<GraphTaskRow>& tasks,
                                           const std::vector<SuspectTask>& suspects,
                                           const GraphIntakeSettings& settings,
                                           const BlobStore& blobs);

// The job's outputs from its stored task outputs, `replaced` (task id → stored tensors) first.
Expected<std::vector<core::Tensor>> mergeStoredOutputs(const GraphJobRow& job,
                                                       const std::vector<GraphTaskRow>& tasks,
                                                       const GraphIntakeSettings& settings,
                                                       const BlobStore& blobs);

} // namespace goblin::labnode
