// How a graph task is decided: each replica that passed the shape gate is compared with the others
// on a worker (replica_referee); any disagreement has the node compute the task itself (a
// tie-break), and agreement is audited by the node at the rate the volunteers' trust asks for
// (trust_book.hpp), drawn from the CSPRNG after the results are in. The decision's outputs are
// stored on a worker and its verdicts committed through the VerdictPath. When a volunteer is
// quarantined, every task of a running job it took part in is decided again without it. Owned by
// GraphJobs, which it calls back through Hooks. Core thread; comparisons, node computations and
// output storage run on the worker pool.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "goblin/verify/cheap_audit.hpp"
#include "kinds/graph/graph_book.hpp"
#include "node/node_context.hpp"
#include "node/trust_book.hpp"
#include "work/job_kind.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

class GraphDecisions {
public:
    struct Hooks {
        std::function<void(GraphTask&)> wantOpinion; // one more volunteer, or the node
        std::function<void(GraphTask&)> decided;     // its verdicts are committed
        std::function<void(GraphJob&, const Error&)> failJob;
        std::function<void(GraphJob&)> recheckDone; // a decided task's recheck finished
    };

    GraphDecisions(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                   VerdictPath& verdicts, PeerRegistry& peers, TrustBook& trust, Hooks hooks);

    // A replica that passed the shape gate.
    void addReplica(GraphTask& task, verify::Replica replica, std::uint64_t peer);
    // A replica that failed it: rejected at once (and another opinion is wanted).
    void rejectMalformed(GraphTask& task, const Lease& lease, const std::string& backend,
                         double computeSeconds, const std::string& why);
    void computeOnNode(GraphTask& task);
    // The volunteer was caught: drop its replicas from undecided tasks and recheck decided ones
    // of running jobs it took part in.
    void onQuarantined(const std::string& volunteerId);

private:
    static constexpr std::string_view kOp = "graph";
    void judge(GraphTask& task);
    void onJudged(std::int64_t taskId, std::size_t judgedCount, verify::Judgement judgement,
                  double seconds);
    void decide(GraphTask& task, verify::Judgement judgement);
    // `keptOutputs` are the decisive replica's outputs that were stored (keptOutputCount).
    void commitDecision(std::int64_t taskId, const verify::Judgement& judgement,
                        std::string storedOutputs, std::vector<core::Tensor> keptOutputs);
    bool dropQuarantined(GraphTask& task);
    void recheck(GraphTask& task);
    // What a recheck found, worked out on a worker: the node's outputs, the accepted replicas
    // they overturn (attempt, volunteer), and those outputs stored when they replace the task's.
    struct RecheckOutcome {
        Expected<std::vector<core::Tensor>> reference;
        std::vector<std::pair<std::int64_t, std::string>> overturned;
        std::optional<std::string> stored;
        double seconds = 0;
    };
    void onRechecked(std::int64_t taskId, RecheckOutcome outcome);
    std::string methodOf(const GraphTask& task, const verify::Judgement& judgement) const;
    // How many of a decided task's outputs the node keeps (stores and merges from): all of them
    // where a later recheck may compare the witnesses, the researcher's alone where the node
    // checked the task itself.
    std::size_t keptOutputCount(const GraphTask& task) const;
    // An audit the trust asked for: a cheap one (cheap_audit.hpp) on a worker, or, for a share
    // drawn from the CSPRNG (TrustSettings::fullAuditShare), the full recomputation.
    void audit(GraphTask& task, verify::Judgement judgement);
    void onCheapAudited(std::int64_t taskId, verify::Judgement judgement,
                        verify::CheapAuditReport report);
    // GraphVerification::Freivalds (graph_checked_alone.cpp): the task's one replica is checked
    // by the node (a cheap audit whose grey zone is checked exactly); passed, it decides the
    // task; failed, it is rejected and another volunteer is asked.
    void checkAlone(GraphTask& task);
    void onCheckedAlone(std::int64_t taskId, std::int64_t attempt, verify::CheapAuditReport report);
    // A node check (audit, check alone) came back: the task when it still waits for a decision.
    GraphTask* afterNodeCheck(std::int64_t taskId, double seconds);
    // The job's shared Freivalds probes of its weights (cheap_audit.hpp).
    std::shared_ptr<verify::AuditProbes> probesOf(const std::string& jobId);
    // Records a rejection of a volunteer's result that no replica of the task keeps.
    void commitRejection(const GraphTask& task, const verify::Replica& replica, std::uint64_t peer,
                         const std::string& method, double ratio, const std::string& why);
    // The node's CPU reference computes the task's chunk on a worker; `done` runs on core.
    using ReferenceDone =
        std::function<void(std::int64_t task, Expected<std::vector<core::Tensor>>, double seconds)>;
    void runReference(const GraphTask& task, ReferenceDone done);

    NodeContext& m_context;
    GraphBook& m_book;
    Scheduler& m_scheduler;
    VerdictPath& m_verdicts;
    PeerRegistry& m_peers;
    TrustBook& m_trust;
    Hooks m_hooks;
    std::set<std::int64_t> m_cheaplyAudited; // tasks decided after a passed cheap audit
    // Per job: the Freivalds probes of its constant matmul operands, shared by its audits.
    std::map<std::string, std::shared_ptr<verify::AuditProbes>> m_auditProbes;
};

} // namespace goblin::labnode
