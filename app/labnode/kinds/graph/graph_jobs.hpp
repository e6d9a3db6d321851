// The graph job kind: each task (a chunk of the researcher's graph) is computed by two different
// volunteers (different addresses and backends where possible) and compared; the node's own CPU
// reference decides any disagreement and audits agreement at the rate trust asks for; a
// quarantined volunteer's tasks are decided again without it, and its delivered jobs audited
// (delivered_audits.hpp); verdicts committed through the VerdictPath, outputs merged and delivered
// (docs/protocol.md, "Graph jobs"). Inputs and each task's accepted outputs are blobs, so a
// restarted node resumes graph jobs (recover()). Core
// thread; comparisons, node recomputations, output storage and merges run on the worker pool.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "goblin/verify/replica_referee.hpp"
#include "kinds/graph/delivered_audits.hpp"
#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/graph_chunks.hpp"
#include "kinds/graph/graph_decisions.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "kinds/graph/graph_replan.hpp"
#include "kinds/graph/graph_retention.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/graph_task_source.hpp"
#include "kinds/graph/plan_desk.hpp"
#include "kinds/graph/stage_inputs.hpp"
#include "node/node_context.hpp"
#include "node/researcher_desk.hpp"
#include "node/trust_book.hpp"
#include "work/job_kind.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

struct GraphJobSettings {
    GraphIntakeSettings intake;
    // How long a released job's data is kept for audits after it finished (graph_retention.hpp);
    // 0 deletes it at release.
    double auditRetentionSeconds = 7 * 24 * 3600.0;
    // How long a task of replicas waits for a second volunteer no connected one may give before
    // the node computes it (second_opinion_watch.hpp).
    double secondOpinionWaitSeconds = 60.0;
};

// Whoever runs a graph job on a researcher's behalf (a training round): told on core when it
// ends, instead of a connection watching it.
struct GraphJobFollower {
    std::function<void(const std::string& jobId, const std::vector<core::Tensor>& outputs)> done;
    std::function<void(const std::string& jobId, const Error& error)> failed;
};

class GraphJobs final : public JobKind {
public:
    GraphJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk, Scheduler& scheduler,
              VerdictPath& verdicts, TrustBook& trust, GraphJobSettings settings);

    std::string_view taskOp() const override { return "graph"; }
    std::string_view submitType() const override { return "submit_graph"; }
    int minimumCatalog() const override { return net::kCatalogVersion; }
    bool ownsJob(std::string_view jobId) const override { return jobId.starts_with("g-"); }

    // Reloads unreleased graph jobs: decided tasks keep their outputs, the others are queued again.
    void recover() override;
    // The node is stopping: no more timers.
    void stop() { m_retention.stop(); }
    void submit(const ResearcherRequest& request, net::Message message) override;
    void fetch(const ResearcherRequest& request, const std::string& jobId) override;
    void release(const ResearcherRequest& request, const std::string& jobId) override;
    void audit(const ResearcherRequest& request, const std::string& jobId) override;
    // A followed job's follower is told it failed (code cancelled), as for any failure.
    Expected<void> cancel(const std::string& jobId, const std::string& who) override;
    Expected<void> purge(const std::string& jobId) override;
    // plan_graph: how a graph job would be cut now (plan_desk.hpp).
    std::vector<std::string_view> routedTypes() const override { return {"plan_graph"}; }
    Expected<void> onRouted(const ResearcherRequest& request, net::Message message) override {
        return m_plans.onPlanGraph(request, message);
    }
    // A task no connected graph volunteer has the memory for waits, or one waits for a second
    // volunteer's opinion.
    std::string whyNothingComputes(const std::string& jobId) override {
        const GraphJob* job = m_book.job(jobId);
        return job && job->state == JobState::Running ? m_tasks.whyWaiting(*job) : std::string();
    }
    // Tasks that starved for a second opinion longer than the settings allow: the node computes
    // them.
    // And stages waiting to be computed again from replaced outputs are, once nothing of them is
    // being decided; a job nothing of which computes for lack of memory is planned again.
    void checkLiveness() override {
        m_tasks.checkStarving();
        m_stages.redoWherePending();
        m_replan.check();
    }

    // A group of graph tasks another job runs for its researcher (a training round, `owner`), on
    // core: part of the owner's lifecycle (group_owner.hpp). `accepted` gets the durable group's
    // id, or why the submission was refused.
    void submitFor(std::int64_t researcherId, GroupOwner owner, net::Message message,
                   std::function<void(Expected<std::string>)> accepted);
    // Tells `follower` when the loaded job `jobId` ends (at once, posted, if it is done already);
    // false when no such job is loaded (released, failed or unknown).
    bool follow(const std::string& jobId, GraphJobFollower follower);
    // The engine the graph tasks live on, and a loaded job's merge task there (0 when it is not
    // loaded): a group's owner keeps its own tasks on it, waiting on the group's merge.
    TaskGraph& taskEngine() { return m_book.engine(); }
    std::int64_t mergeTaskIdOf(const std::string& jobId) {
        const GraphJob* job = m_book.job(jobId);
        return job ? job->mergeTask : 0;
    }
    // The node's comparison and recomputation seconds for a loaded job (0 when not loaded).
    double verificationSeconds(const std::string& jobId) {
        const GraphJob* job = m_book.job(jobId);
        return job ? job->verifySeconds : 0.0;
    }
    // Releases a followed job once its outputs are used (its data kept for audits like any).
    void releaseFor(const std::string& jobId);
    // A group its owner no longer wants (a round a cancel or rewind undid): cancelled by `who`
    // while it runs, released (its outputs unused) once it finished.
    void dropFor(const std::string& jobId, const std::string& who) {
        if (auto cancelled = cancel(jobId, who); !cancelled)
            releaseFor(jobId);
    }
    // Told when an audit after a quarantine corrected a delivered job's tasks (a training round's
    // graph job, say): the job and why.
    void addCorrectionListener(DeliveredAudits::OnRechecked listener) {
        m_audits.addCorrectionListener(std::move(listener));
    }

    // Told at start-up and hourly the time before which data kept for audits is due for deletion
    // (a training job keeps its states for the audits of its rounds' graph jobs).
    void addRetentionListener(std::function<void(double finishedBefore)> listener) {
        m_retention.addPruneListener(std::move(listener));
    }

    // The scheduler's side: GraphTaskSource.
    bool hasQueued() const override { return m_book.hasQueued(); }
    std::optional<TaskClaim> claimTaskFor(const Peer& volunteer,
                                          const TaskFilter& mayTake) override {
        return m_tasks.claimFor(volunteer, mayTake);
    }
    TaskFrame taskFrame(const Lease& lease) override { return m_tasks.frame(lease); }
    void onResult(const Lease& lease, net::Message message) override {
        m_tasks.onResult(lease, std::move(message));
    }
    void onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail) override {
        m_tasks.onLeaseLost(lease, why, detail);
    }
    void computeOnNode(std::int64_t task) override { m_tasks.computeOnNode(task); }

private:
    void createJob(const ResearcherRequest& request, GraphIntake intake);
    Expected<GraphJob*> insertJob(std::int64_t researcherId, GroupOwner owner, GraphIntake intake);
    Expected<void> resumeJob(const GraphJobRow& row);
    Expected<GraphJob*> addJob(const GraphJobRow& row, GraphIntake intake,
                               const std::vector<GraphTaskRow>& tasks);
    void onDecided(GraphTask& task);
    void finishJob(GraphJob& job);
    void onRecheckDone(GraphJob& job);
    void onMerged(const std::string& jobId, Expected<std::vector<core::Tensor>> merged);
    void deliver(std::uint64_t peer, const GraphJob& job, std::int64_t requestId);
    void failJob(GraphJob& job, const Error& error);
    GraphJob* ownedJob(const ResearcherRequest& request, const std::string& jobId);
    // The researcher's own job, when it was cancelled (and so no longer loaded).
    std::optional<GraphJobRow> cancelledJob(const ResearcherRequest& request,
                                            const std::string& jobId);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    Scheduler& m_scheduler;
    VerdictPath& m_verdicts;
    GraphJobSettings m_settings;
    GraphBook m_book;
    GraphDecisions m_decisions;
    GraphTaskSource m_tasks;
    StageInputs m_stages;
    GraphReplan m_replan;
    DeliveredAudits m_audits;
    GraphRetention m_retention;
    PlanDesk m_plans;
    std::map<std::string, GraphJobFollower> m_followers;
};

} // namespace goblin::labnode
