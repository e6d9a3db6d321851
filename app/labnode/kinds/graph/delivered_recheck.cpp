#include "kinds/graph/delivered_recheck.hpp"

#include <chrono>

#include <boost/json.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/replica_referee.hpp"
#include "kinds/graph/graph_blobs.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

Expected<TaskRecheck> recheckTask(const GraphChunk& chunk, const SuspectTask& suspect,
                                  const BlobStore& blobs) {
    auto stored = loadTensors(blobs, suspect.outputs);
    if (!stored)
        return tl::unexpected(stored.error());
    auto computed = reference::runGraph(chunk.graph, chunk.plan, valuesOf(chunk.inputs));
    if (!computed)
        return tl::unexpected(computed.error());
    verify::Replica delivered;
    delivered.volunteerId = "delivered";
    delivered.backend = suspect.backend;
    delivered.outputs = std::move(*stored);
    verify::Replica node;
    node.backend = "node-reference";
    node.outputs = std::move(*computed);
    // Tasks keep the researcher's outputs only (older rows: the witnesses after them too).
    std::vector<verify::OutputTolerance> tolerances = chunk.tolerances;
    if (delivered.outputs.size() < node.outputs.size()) {
        node.outputs.resize(delivered.outputs.size());
        tolerances.resize(delivered.outputs.size());
    }
    const verify::Judgement judgement = verify::judgeReplicas(tolerances, {delivered, node});
    TaskRecheck recheck{
        suspect.taskId, judgement.verdicts[0].accepted, {}, judgement.verdicts[0].reason};
    if (recheck.stands)
        return recheck;
    auto written = storeTensors(blobs, node.outputs);
    if (!written)
        return tl::unexpected(written.error());
    recheck.storedOutputs = json::serialize(*written);
    return recheck;
}

} // namespace

bool jobDataKept(const GraphJobRow& job, const std::vector<GraphTaskRow>& tasks,
                 const BlobStore& blobs) {
    std::vector<std::string> digests = storedDigests(job.inputs);
    for (const GraphTaskRow& task : tasks)
        for (std::string& digest : storedDigests(task.outputs))
            digests.push_back(std::move(digest));
    for (const std::string& digest : digests)
        if (!blobs.has(digest))
            return false;
    return !digests.empty();
}

Expected<JobRecheck> recheckDeliveredTasks(const GraphJobRow& job,
                                           const std::vector<SuspectTask>& suspects,
                                           const GraphIntakeSettings& settings,
                                           const BlobStore& blobs) {
    const auto start = std::chrono::steady_clock::now();
    auto intake = reloadGraphIntake(job, settings, blobs);
    if (!intake)
        return tl::unexpected(intake.error());
    JobRecheck recheck;
    for (const SuspectTask& suspect : suspects) {
        if (suspect.chunk < 0 || suspect.chunk >= static_cast<std::int64_t>(intake->chunks.size()))
            return makeError(ErrorCode::Internal, "a task's chunk is out of range");
        auto task =
            recheckTask(intake->chunks[static_cast<std::size_t>(suspect.chunk)], suspect, blobs);
        if (!task)
            return tl::unexpected(task.error());
        recheck.tasks.push_back(std::move(*task));
    }
    recheck.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return recheck;
}

Expected<std::vector<core::Tensor>> mergeStoredOutputs(const GraphJobRow& job,
                                                       const std::vector<GraphTaskRow>& tasks,
                                                       const GraphIntakeSettings& settings,
                                                       const BlobStore& blobs) {
    auto intake = reloadGraphIntake(job, settings, blobs);
    if (!intake)
        return tl::unexpected(intake.error());
    if (tasks.size() != intake->chunks.size())
        return makeError(ErrorCode::Internal, "the job's tasks do not match its chunks");
    std::vector<std::vector<core::Tensor>> outputs;
    for (const GraphTaskRow& task : tasks) {
        auto stored = loadTensors(blobs, task.outputs);
        if (!stored)
            return tl::unexpected(stored.error());
        outputs.push_back(std::move(*stored));
    }
    return mergeChunkOutputs(intake->submission, intake->chunks, outputs);
}

} // namespace goblin::labnode
