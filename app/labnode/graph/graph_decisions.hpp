// How a graph task is decided: each replica that passed the shape gate is compared with the others
// on a worker (replica_referee); disagreement asks for another opinion, no agreement (or a random
// sample) has the node compute the task itself; the decision's outputs are stored on a worker and
// its verdicts committed through the VerdictPath. Owned by GraphJobs, which it calls back through
// Hooks. Core thread; comparisons, node computations and output storage run on the worker pool.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "graph_book.hpp"
#include "job_kind.hpp"
#include "node_context.hpp"
#include "scheduler.hpp"
#include "verdict_path.hpp"

namespace goblin::labnode {

class GraphDecisions {
public:
    struct Hooks {
        std::function<void(GraphTask&)> wantOpinion; // one more volunteer, or the node
        std::function<void(GraphTask&)> decided;     // its verdicts are committed
        std::function<void(GraphJob&, const Error&)> failJob;
    };

    GraphDecisions(NodeContext& context, GraphBook& book, Scheduler& scheduler,
                   VerdictPath& verdicts, PeerRegistry& peers, double sampleRate,
                   std::uint64_t seed, Hooks hooks);

    // A replica that passed the shape gate.
    void addReplica(GraphTask& task, Replica replica, std::uint64_t peer);
    // A replica that failed it: rejected at once (and another opinion is wanted).
    void rejectMalformed(GraphTask& task, const Lease& lease, const std::string& backend,
                         double computeSeconds, const std::string& why);
    void computeOnNode(GraphTask& task);

private:
    static constexpr std::string_view kOp = "graph";
    void judge(GraphTask& task);
    void onJudged(std::int64_t taskId, std::size_t judgedCount, Judgement judgement,
                  double seconds);
    void decide(GraphTask& task, Judgement judgement);
    void commitDecision(std::int64_t taskId, const Judgement& judgement, std::string storedOutputs);

    NodeContext& m_context;
    GraphBook& m_book;
    Scheduler& m_scheduler;
    VerdictPath& m_verdicts;
    PeerRegistry& m_peers;
    double m_sampleRate;
    std::mt19937_64 m_random;
    Hooks m_hooks;
};

} // namespace goblin::labnode
