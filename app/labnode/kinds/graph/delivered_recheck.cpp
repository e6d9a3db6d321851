#include "kinds/graph/delivered_recheck.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <boost/json.hpp>

#include "goblin/reference/graph_executor.hpp"
#include "goblin/verify/replica_referee.hpp"
#include "kinds/graph/graph_blobs.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

constexpr std::string_view kNodeBackend = "node-reference";

// How a task's stored outputs are compared with the node's: as a suspect volunteer's result
// (within the tolerance its backend is allowed, bit for bit for a canonical one), or bit for bit
// whatever computed them — a task whose inputs the recheck replaced (its stored outputs come from
// the wrong inputs).
enum class Comparison { AsTheSuspectsBackendAllows, BitForBit };
struct StoredOutputs {
    std::string digests;
    std::string suspectBackend; // read for AsTheSuspectsBackendAllows
    Comparison comparison = Comparison::AsTheSuspectsBackendAllows;
};

// The node's outputs for a chunk (its boundary inputs filled) against those stored.
Expected<TaskRecheck> recheckTask(const GraphChunk& chunk, std::int64_t taskId,
                                  const StoredOutputs& storedOutputs, const BlobStore& blobs,
                                  std::vector<core::Tensor>& nodeOutputs) {
    auto stored = loadTensors(blobs, storedOutputs.digests);
    if (!stored)
        return tl::unexpected(stored.error());
    auto computed = reference::runGraph(chunk.graph, chunk.plan, valuesOf(chunk.inputs));
    if (!computed)
        return tl::unexpected(computed.error());
    verify::Replica delivered;
    delivered.volunteerId = "delivered";
    // The referee compares two canonical backends' outputs bit for bit.
    delivered.backend = storedOutputs.comparison == Comparison::BitForBit
                            ? std::string(kNodeBackend)
                            : storedOutputs.suspectBackend;
    delivered.outputs = std::move(*stored);
    verify::Replica node;
    node.backend = kNodeBackend;
    node.outputs = std::move(*computed);
    // Tasks keep the outputs they hand on only (older rows: the witnesses after them too).
    std::vector<verify::OutputTolerance> tolerances = chunk.tolerances;
    if (delivered.outputs.size() < node.outputs.size()) {
        node.outputs.resize(delivered.outputs.size());
        tolerances.resize(delivered.outputs.size());
    }
    const verify::Judgement judgement = verify::judgeReplicas(tolerances, {delivered, node});
    TaskRecheck recheck{taskId, judgement.verdicts[0].accepted, {}, judgement.verdicts[0].reason};
    nodeOutputs = std::move(node.outputs);
    if (recheck.stands)
        return recheck;
    auto written = storeTensors(blobs, nodeOutputs);
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
                                           const std::vector<GraphTaskRow>& tasks,
                                           const std::vector<SuspectTask>& suspects,
                                           const GraphIntakeSettings& settings,
                                           const BlobStore& blobs) {
    const auto start = std::chrono::steady_clock::now();
    auto intake = reloadGraphIntake(job, settings, blobs);
    if (!intake)
        return tl::unexpected(intake.error());
    std::vector<GraphChunk>& chunks = intake->chunks;
    if (tasks.size() != chunks.size())
        return makeError(ErrorCode::Internal, "the job's tasks do not match its chunks");
    std::map<std::size_t, const SuspectTask*> suspectOf;
    for (const SuspectTask& suspect : suspects) {
        if (suspect.chunk < 0 || suspect.chunk >= static_cast<std::int64_t>(chunks.size()))
            return makeError(ErrorCode::Internal, "a task's chunk is out of range");
        suspectOf[static_cast<std::size_t>(suspect.chunk)] = &suspect;
    }
    // The outputs each chunk has now (stored, or corrected in this recheck), loaded when read.
    std::vector<std::optional<std::vector<core::Tensor>>> now(chunks.size());
    std::set<std::size_t> corrected;
    const auto outputsOf = [&](std::size_t c) -> const std::vector<core::Tensor>* {
        if (!now[c])
            if (auto loaded = loadTensors(blobs, tasks[c].outputs))
                now[c] = std::move(*loaded);
        return now[c] ? &*now[c] : nullptr;
    };
    JobRecheck recheck;
    for (std::size_t c = 0; c < chunks.size(); ++c) { // stages come after what they read
        const bool suspect = suspectOf.contains(c);
        const bool inputsReplaced =
            std::any_of(chunks[c].dependsOn.begin(), chunks[c].dependsOn.end(),
                        [&](std::size_t from) { return corrected.contains(from); });
        if (!suspect && !inputsReplaced)
            continue;
        if (auto filled = fillBoundaryInputs(chunks[c], outputsOf); !filled)
            return tl::unexpected(filled.error());
        // A task whose inputs were corrected is compared bit for bit, as a canonical result,
        // whatever computed it: its stored outputs come from the wrong inputs, so any difference
        // replaces them (its volunteers are not blamed), or a later audit finds them stale.
        const StoredOutputs stored =
            inputsReplaced ? StoredOutputs{tasks[c].outputs, {}, Comparison::BitForBit}
                           : StoredOutputs{tasks[c].outputs, suspectOf.at(c)->backend,
                                           Comparison::AsTheSuspectsBackendAllows};
        std::vector<core::Tensor> nodeOutputs;
        auto task = recheckTask(chunks[c], tasks[c].id, stored, blobs, nodeOutputs);
        if (!task)
            return tl::unexpected(task.error());
        task->inputsReplaced = inputsReplaced;
        if (!task->stands) {
            corrected.insert(c);
            now[c] = std::move(nodeOutputs);
        }
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
