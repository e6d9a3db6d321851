// The interface every kind of job implements (matmul, graph; training next): intake of a
// submission, fetch and release, recovery after a restart, and its side of scheduling — which task
// a volunteer may take next, the task frame, what to do with a result or a lost lease. The
// scheduler, the researcher desk and the verdict path are shared by every kind. A kind whose job is
// made of rounds simply offers the next round's tasks once the earlier ones are decided (and wakes
// the scheduler). Implementations live on the core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"
#include "node/peer_registry.hpp"

namespace goblin::labnode {

// A researcher's request as a kind sees it: who asked, which researcher, which request id.
struct ResearcherRequest {
    std::uint64_t peer = 0;
    std::int64_t researcherId = 0;
    std::int64_t requestId = 0;
};

// One lease: (task, attempt) of a kind, held by one volunteer connection until a deadline.
struct Lease {
    std::string_view kind; // the kind's taskOp()
    std::int64_t task = 0;
    std::int64_t attempt = 0;
    std::uint64_t peer = 0;
    std::string volunteerId;
    std::string backend; // the volunteer's advertised backend
    double deadline = 0;
};

enum class LeaseLoss { Expired, Disconnected, TaskError, NotSent };

// Why a lease ended without a result, as a task's story tells it.
inline std::string_view describe(LeaseLoss why) {
    switch (why) {
    case LeaseLoss::Expired:
        return "its lease expired";
    case LeaseLoss::Disconnected:
        return "its volunteer left";
    case LeaseLoss::TaskError:
        return "its volunteer could not compute it";
    case LeaseLoss::NotSent:
        return "its task frame could not be sent";
    }
    return "its lease ended";
}

// Builds a task frame. Runs on a worker when `heavy` (copies of tile inputs), else inline.
struct TaskFrame {
    std::function<Expected<net::Message>()> build;
    bool heavy = false;
};

// A task a kind hands to the scheduler for one volunteer: the task and its new attempt number.
struct TaskClaim {
    std::int64_t task = 0;
    std::int64_t attempt = 0;
};

// The scheduler's word on whether a task may go to the volunteer being served: false for a task
// this volunteer let expire (or dropped), or one the node is about to compute. A kind skips such
// tasks and leaves them queued.
using TaskFilter = std::function<bool(std::int64_t task)>;

class JobKind {
public:
    virtual ~JobKind() = default;

    // The `op` of this kind's task, result and task_error frames ("matmul", "graph").
    virtual std::string_view taskOp() const = 0;
    // The researcher message that submits a job of this kind ("submit_matmul").
    virtual std::string_view submitType() const = 0;
    // The oldest catalog a researcher connection must speak to submit this kind.
    virtual int minimumCatalog() const = 0;
    virtual bool ownsJob(std::string_view jobId) const = 0;

    // Start-up, on core: reload this kind's unfinished jobs from the store.
    virtual void recover() = 0;

    // Researcher desk.
    virtual void submit(const ResearcherRequest& request, net::Message message) = 0;
    virtual void fetch(const ResearcherRequest& request, const std::string& jobId) = 0;
    virtual void release(const ResearcherRequest& request, const std::string& jobId) = 0;
    // What audits after delivery found (audit_report); released jobs may be asked too.
    virtual void audit(const ResearcherRequest& request, const std::string& jobId) = 0;
    // Cancels a running job (its researcher's `cancel`, or lab staff's; `who` says which, for
    // the log and the researcher): its queued tasks and outstanding leases end (a late result is
    // stale), its data is deleted (a training job keeps its committed rounds), its state becomes
    // "cancelled" and its watchers get job_failed with code cancelled. It never merges or
    // delivers afterwards. InvalidInput when the job does not run (ResearcherDesk checks owners).
    virtual Expected<void> cancel(const std::string& jobId, const std::string& who) = 0;
    // Deletes a job that no longer runs (done, failed, cancelled, released): its data and its
    // rows. NotFound for an unknown job, InvalidInput for a running one.
    virtual Expected<void> purge(const std::string& jobId) = 0;
    // The researcher messages this kind answers besides the lifecycle's (submit, fetch, release,
    // audit, cancel): "upload", "fetch_rows", "train_batch"… Each type belongs to one kind.
    virtual std::vector<std::string_view> routedTypes() const { return {}; }
    // One of those messages: the kind answers it, unless it returns an error, which the desk
    // answers.
    virtual Expected<void> onRouted(const ResearcherRequest& /*request*/,
                                    net::Message /*message*/) {
        return {};
    }
    // Why no connected volunteer can compute this running job now, beyond what the desk sees
    // (none connected, none of its kind): none lends the memory its tasks need, say. Empty: it
    // can be computed. Asked at the two-second staff check.
    virtual std::string whyNothingComputes(const std::string& /*jobId*/) { return {}; }
    // At the staff check, before whyNothingComputes: tasks that wait for what no connected
    // volunteer may give are decided another way once they have waited long enough.
    virtual void checkLiveness() {}

    // Scheduler.
    virtual bool hasQueued() const = 0;
    // Takes the next task this volunteer may compute, and `mayTake` allows, off the kind's queue,
    // with a fresh attempt.
    virtual std::optional<TaskClaim> claimTaskFor(const Peer& volunteer,
                                                  const TaskFilter& mayTake) = 0;
    // The frame for a claimed task whose lease is durable.
    virtual TaskFrame taskFrame(const Lease& lease) = 0;
    // The result of a lease the scheduler found current (and has ended).
    virtual void onResult(const Lease& lease, net::Message message) = 0;
    // A lease ended without a result.
    virtual void onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail) = 0;
    // Volunteers gave up on the task (its lease expired `--max-task-expiries` times, or every
    // connected volunteer let it expire): the node computes it, off the queue, and records the
    // decision like a verdict (method "node-compute" for tiles). Idempotent; a decided task or one
    // the node already computes is left alone.
    virtual void computeOnNode(std::int64_t task) = 0;
};

} // namespace goblin::labnode
