// The scheduler's side of graph tasks: which queued opinion a volunteer takes (graph_book.hpp),
// its task frame — only the computation, with the inputs the volunteer keeps by digest
// (sent_inputs.hpp) — a result through the shape gate to the deciders (graph_decisions.hpp), a
// lost lease asking another volunteer, and the node computing a task volunteers gave up on or
// that starved for a second opinion (second_opinion_watch.hpp). Core thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "goblin/net/message.hpp"
#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/graph_decisions.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "kinds/graph/second_opinion_watch.hpp"
#include "kinds/graph/sent_inputs.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "work/job_kind.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

class GraphTaskSource {
public:
    GraphTaskSource(NodeContext& context, PeerRegistry& peers, Scheduler& scheduler,
                    VerdictPath& verdicts, GraphBook& book, GraphDecisions& decisions,
                    double secondOpinionWaitSeconds);

    std::optional<TaskClaim> claimFor(const Peer& volunteer, const TaskFilter& mayTake);
    // A replicated task's lease to a volunteer of protocol 10 omits the witnesses when another
    // lease of it, or a replica in hand, carries them.
    TaskFrame frame(const Lease& lease);
    void onResult(const Lease& lease, net::Message message);
    void onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail);
    // Volunteers gave up on the task: the node computes it (idempotent).
    void computeOnNode(std::int64_t taskId);
    // Asks a volunteer that has not seen the task yet for one more opinion; with none connected
    // that lends the memory, the node decides.
    void queueOpinion(GraphTask& task);
    // The job ended: volunteers drop the inputs they kept only for it (forget_inputs).
    void forgetInputsOf(const std::string& jobId);
    // The connected volunteers that compute graph tasks.
    std::vector<const Peer*> graphVolunteers() const;
    // How many they are and what the largest two lend: what a new job is planned for.
    VolunteerPool volunteerPool() const;
    // Why the task starves: it holds a volunteer's opinion and wants another that no connected
    // volunteer may give; nullopt when it does not (second_opinion_watch.hpp).
    std::optional<std::string> whyNoOtherOpinion(const GraphTask& task) const;
    // At the staff check: tasks of running jobs that starved the whole wait are computed by the
    // node (logged once each).
    void checkStarving();
    // Why nothing of the job computes and what unblocks it, for its progress: a task no
    // connected volunteer lends the memory for, or one that waits for a second opinion; empty
    // when neither (or when no volunteer is connected: the desk says so).
    std::string whyWaiting(const GraphJob& job) const;

private:
    // Whether a replica in hand or another outstanding lease than `attempt` brings the task's
    // witnesses.
    bool witnessesCarriedBesides(const GraphTask& task, std::int64_t attempt) const;

    NodeContext& m_context;
    PeerRegistry& m_peers;
    Scheduler& m_scheduler;
    VerdictPath& m_verdicts;
    GraphBook& m_book;
    GraphDecisions& m_decisions;
    std::map<std::uint64_t, SentInputs> m_sentInputs; // by volunteer connection
    SecondOpinionWatch m_secondOpinions;
    // The tasks claimed for each volunteer connection in the scheduler's current pass.
    struct ClaimedInPump {
        std::uint64_t pump = 0;
        std::map<std::uint64_t, VolunteerLoad> loads;
    } m_claimed;
};

} // namespace goblin::labnode
