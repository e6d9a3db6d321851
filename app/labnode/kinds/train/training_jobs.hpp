// The training job kind (issue 11; docs/training.md): the node holds a training job's parameters
// and optimizer state and runs its rounds. Each round is a graph job the node submits for the
// researcher (GraphJobs::submitFor): the captured step on the round's batch, one verified task per
// micro-batch, loss and gradient averaged in float64. When it is done a worker clips the gradient
// and takes the optimizer step; the round commits (its record, the new parameters and state as
// blobs) before the next starts, so a node killed at any moment resumes from the last committed
// round — or re-attaches to the round's graph job — and reaches the same bits. Researchers get
// train_round after every round and job_done (parameters, optimizer state, history) at the end.
// Its tasks are graph tasks: this kind leases nothing itself. Core thread; O(size) work on workers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "goblin/net/messages/train_data_messages.hpp"
#include "kinds/graph/graph_jobs.hpp"
#include "kinds/train/train_store.hpp"
#include "kinds/train/train_submission.hpp"
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
    // Batch k of a streamed job (training_batches.cpp; docs/protocol.md, "Streamed training
    // data"): checked, stored on a worker, recorded, answered batch_accepted; a round waiting for
    // it starts.
    std::vector<std::string_view> routedTypes() const override { return {"train_batch"}; }
    // train_batch (parsed, then receiveBatch).
    Expected<void> onRouted(const ResearcherRequest& request, net::Message message) override;
    // What its running round's graph job waits for, or that its round waits for a batch.
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
    struct Job {
        std::string id;
        std::int64_t researcher = 0;
        JobState state = JobState::Running; // running, done, failed, cancelled (until released)
        TrainSubmission submission;
        core::Tensor params;
        std::vector<core::Tensor> optimizerState;
        std::string storedParams; // their stored tensors (train_jobs.params)
        std::int64_t roundsDone = 0;
        std::string roundJob;
        std::string error; // why it failed, or who cancelled it
        double roundStarted = 0;
        bool stepping = false;
        // Streamed data: batches held for the rounds to come (stored tensors), the next batch
        // the node expects, whether the data ended, whether the round waits for its batch.
        std::map<std::int64_t, std::string> batches;
        std::int64_t nextBatch = 1;
        bool dataEnded = false;
        bool waitingForBatch = false;
    };
    struct Step; // a round's outcome, computed on a worker

    Expected<void> receiveBatch(const ResearcherRequest& request, net::TrainBatch batch);
    Expected<void> resumeJob(const TrainJobRow& row);
    void startRound(Job& job);
    void followRound(Job& job);
    void onRoundDone(const std::string& jobId, const std::string& graphJob,
                     const std::vector<core::Tensor>& outputs);
    void commitRound(const std::string& jobId, Expected<Step> step);
    void failJob(Job& job, const Error& error);
    // Its last round committed (`committed`: that commit wrote its state), or its data ended
    // where the next round would start: done, delivered to its watchers.
    void finishJob(Job& job, bool committed);
    // training_batches.cpp
    void onBatchStored(const ResearcherRequest& request, const std::string& jobId,
                       std::int64_t batch, Expected<std::string> stored);
    void loadBatches(Job& job);
    void dropTrainedBatch(Job& job, std::int64_t batch);
    void dropBatches(Job& job);
    void deleteUnusedBlobs(const std::string& stored);
    void deliver(std::uint64_t peer, const Job& job, std::int64_t requestId);
    Job* ownedJob(const ResearcherRequest& request, const std::string& jobId);
    std::int64_t round(const Job& job) const {
        return job.submission.plan.firstRound + job.roundsDone;
    }

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    GraphJobs& m_graphs;
    core::graph::GraphLimits m_limits;
    std::map<std::string, Job> m_jobs;
};

} // namespace goblin::labnode
