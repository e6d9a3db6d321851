// A training job's rounds found poisoned after they committed, and its data kept for that. An
// audit after a quarantine corrects a round's graph job (delivered_audits.hpp): a running job is
// rewound to that round (TrainingRounds::rewind); a job that had ended — done, or released while
// its data is kept for audits (state retained) — is trained again from that round to its end
// (a late catch, train_late_catches), its researcher told by an audit_report when that ends and
// its fetch answered with the parameters trained again. So an ended job keeps its inputs and the
// state before each round as long as its rounds' graph jobs keep theirs for audits (the node's
// `--audit-retention-hours`); then they are deleted. Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kinds/graph/graph_jobs.hpp"
#include "kinds/train/training_job.hpp"
#include "kinds/train/training_rounds.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/researcher_desk.hpp"

namespace goblin::labnode {

class LateCatches {
public:
    struct Hooks {
        std::function<TrainingJob*(const std::string& jobId)> find; // a loaded job, or null
        // Loads a retained job into memory; null when there is none.
        std::function<TrainingJob*(const std::string& jobId)> loadRetained;
        std::function<void(const std::string& jobId)> unload;
        // Sends job_done to the connections watching the job.
        std::function<void(TrainingJob&)> deliverToWatchers;
    };

    LateCatches(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk, GraphJobs& graphs,
                TrainingRounds& rounds, Hooks hooks);

    // Start-up, after the running jobs were loaded: jobs a late catch was training again train
    // on.
    void recover();
    // An audit corrected graph job `graphJob`: if it is a committed round, the job is rewound
    // (running) or trained again (ended).
    void onRoundCorrected(const std::string& graphJob, const std::string& why);
    // A job trained again after a late catch reached its last round (`error` empty) or could not
    // (`error`): it returns to the state it had, its researcher is sent an audit_report.
    void endRetraining(TrainingJob& job, const std::string& error);
    // Whether a job that ended keeps its inputs and states for the audits of its rounds: it was
    // not streamed and a round's graph job keeps its data for audits.
    bool keepsForAudits(const TrainingJob& job);
    // Answers `audit` (request id, or 0 pushed) for this job to `peers`.
    void sendReport(const std::string& jobId, const std::vector<std::uint64_t>& peers,
                    std::int64_t requestId);
    // Retained jobs whose last change came before `endedBefore`: released, data deleted.
    void prune(double endedBefore);
    // The states kept for the job's rewinds go.
    void dropSnapshots(const std::string& jobId);

private:
    void retrain(TrainingJob& job, const std::string& graphJob, std::int64_t round,
                 const std::string& why);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    GraphJobs& m_graphs;
    TrainingRounds& m_rounds;
    Hooks m_hooks;
};

} // namespace goblin::labnode
