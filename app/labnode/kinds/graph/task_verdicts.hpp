// Writes down what was decided about a graph task's replicas, through the VerdictPath: a decision
// (the decisive replica's outputs stored on a worker before every replica's verdict commits with
// the task's accepted outputs), a rejection no replica of the task keeps, and the replicas of
// quarantined volunteers dropped from an undecided task. Shared by the deciders (replica_decider,
// checked_alone_decider). Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kinds/graph/graph_book.hpp"
#include "node/node_context.hpp"
#include "node/trust_book.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

// What the deciders tell the graph kind.
struct DecisionHooks {
    std::function<void(GraphTask&)> wantOpinion; // one more volunteer, or the node
    std::function<void(GraphTask&)> decided;     // its verdicts are committed
    std::function<void(GraphJob&, const Error&)> failJob;
    std::function<void(GraphJob&)> recheckDone; // a decided task's recheck finished
    std::function<void(GraphTask&)> rejudge;    // what a decision rested on changed: judge again
    // A decided task's outputs were replaced by the node's (what read them is computed again).
    std::function<void(GraphTask&)> outputsReplaced;
};

// How the decisive replica was vouched for, besides its agreement with the others.
enum class Vouched { ByReplicas, ByCheapAudit };

class TaskVerdicts {
public:
    static constexpr std::string_view kOp = "graph";

    TaskVerdicts(NodeContext& context, GraphBook& book, Scheduler& scheduler, VerdictPath& verdicts,
                 PeerRegistry& peers, TrustBook& trust, const DecisionHooks& hooks);

    // Decides the task by the judgement's decisive replica: its outputs are stored, then every
    // replica's verdict and the task's outputs commit together, then hooks.decided. A volunteer
    // of it caught while the outputs were stored sends the task back to judging.
    void decide(GraphTask& task, verify::Judgement judgement, Vouched vouched);
    // Records a rejection of a volunteer's result that no replica of the task keeps.
    void reject(const GraphTask& task, const verify::Replica& replica, std::uint64_t peer,
                const std::string& method, double ratio, const std::string& why);
    // Drops the replicas of quarantined volunteers from an undecided task, records their
    // verdicts and asks for as many opinions again. Whether any was dropped.
    bool dropQuarantined(GraphTask& task);
    // Whether a volunteer replica of the task comes from a quarantined volunteer.
    bool restsOnQuarantined(const GraphTask& task);

private:
    void commitDecision(std::int64_t taskId, const verify::Judgement& judgement,
                        const std::string& method, std::string storedOutputs,
                        std::vector<core::Tensor> keptOutputs);
    std::string methodOf(const GraphTask& task, const verify::Judgement& judgement,
                         Vouched vouched) const;
    // How many of a decided task's outputs the node keeps (stores and merges from): all of them
    // where a later recheck may compare the witnesses, the researcher's alone where the node
    // checked the task itself.
    std::size_t keptOutputCount(const GraphTask& task) const;

    NodeContext& m_context;
    GraphBook& m_book;
    Scheduler& m_scheduler;
    VerdictPath& m_verdicts;
    PeerRegistry& m_peers;
    TrustBook& m_trust;
    const DecisionHooks& m_hooks;
};

} // namespace goblin::labnode
