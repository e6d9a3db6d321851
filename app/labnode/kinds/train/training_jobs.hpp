// The training job kind (docs/training.md): the node holds a training job's parameters and
// optimizer state (TrainingJob), runs its rounds (TrainingRounds: each a verified group of graph
// tasks, then the round's step task, which the node decides by a durable commit) and, for
// streamed data, holds its batches (StreamedBatches). This class is the job's lifecycle:
// submission, recovery after a restart, fetch (job_done: parameters, optimizer state, history),
// release, cancel and purge. Volunteers compute its rounds' graph tasks and the node its steps:
// this kind leases nothing itself. Core thread; O(size) work on workers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kinds/graph/graph_jobs.hpp"
#include "kinds/train/late_catches.hpp"
#include "kinds/train/streamed_batches.hpp"
#include "kinds/train/train_store.hpp"
#include "kinds/train/train_submission.hpp"
#include "kinds/train/training_job.hpp"
#include "kinds/train/training_rounds.hpp"
#include "node/node_context.hpp"
#include "node/researcher_desk.hpp"
#include "work/job_kind.hpp"

namespace goblin::labnode {

class TrainingJobs final : public JobKind {
public:
    TrainingJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk, GraphJobs& graphs,
                 core::graph::GraphLimits limits);

    std::string_view taskOp() const override { return "train"; }
    std::string_view submitType() const override { return "submit_train"; }
    int minimumCatalog() const override { return net::kCatalogVersion; }
    bool ownsJob(std::string_view jobId) const override { return jobId.starts_with("t-"); }

    // After GraphJobs::recover: running jobs continue (re-attached to their round's graph job
    // when it is still loaded), done and failed ones wait for their researcher.
    void recover() override;
    void submit(const ResearcherRequest& request, net::Message message) override;
    void fetch(const ResearcherRequest& request, const std::string& jobId) override;
    void release(const ResearcherRequest& request, const std::string& jobId) override;
    void audit(const ResearcherRequest& request, const std::string& jobId) override;
    // Keeps the committed rounds (fetch delivers them, summary.state "cancelled") and cancels
    // the running round's graph job; the data stays until release (a restart reloads the job).
    Expected<void> cancel(const std::string& jobId, const std::string& who) override;
    // Its rounds' graph jobs are purged with it.
    Expected<void> purge(const std::string& jobId) override;
    // Batch k of a streamed job (StreamedBatches): checked, stored on a worker, recorded,
    // answered batch_accepted; a round waiting for it starts.
    std::vector<std::string_view> routedTypes() const override { return {"train_batch"}; }
    // train_batch (parsed, then StreamedBatches::receive).
    Expected<void> onRouted(const ResearcherRequest& request, net::Message message) override;
    // That its round waits for a batch, or for its commit to be written, or what its running
    // round's graph job waits for.
    std::string whyNothingComputes(const std::string& jobId) override;

    // No tasks of its own: its rounds are graph jobs.
    bool hasQueued() const override { return false; }
    std::optional<TaskClaim> claimTaskFor(const Peer&, const TaskFilter&) override {
        return std::nullopt;
    }
    TaskFrame taskFrame(const Lease& lease) override;
    void onResult(const Lease&, net::Message) override {}
    void onLeaseLost(const Lease&, LeaseLoss, const std::string&) override {}
    void computeOnNode(std::int64_t) override {}

private:
    Expected<void> resumeJob(const TrainJobRow& row);
    void failJob(TrainingJob& job, const Error& error);
    // Its last round committed (`committed`: that commit wrote its state), or its data ended
    // where the next round would start: done, delivered to its watchers.
    void finishJob(TrainingJob& job, bool committed);
    void deliver(std::uint64_t peer, const TrainingJob& job, std::int64_t requestId);
    // A job released while its data is kept for audits, read back into memory; null if none.
    TrainingJob* loadRetained(const std::string& jobId);
    // The loaded job (running or ended, until released), or null.
    TrainingJob* findJob(const std::string& jobId);
    // The job is no longer held in memory (released, purged, or read back for a late catch).
    void unload(const std::string& jobId);
    TrainingJob* ownedJob(const ResearcherRequest& request, const std::string& jobId);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    GraphJobs& m_graphs;
    core::graph::GraphLimits m_limits;
    std::map<std::string, TrainingJob> m_jobs;
    StreamedBatches m_batches;
    TrainingRounds m_rounds;
    LateCatches m_late;
};

} // namespace goblin::labnode
