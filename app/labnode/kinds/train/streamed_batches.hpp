// A streamed training job's batches (docs/protocol.md, "Streamed training data"): train_batch k
// checked against the job's plan, stored on a worker and recorded (blobs and a train_batches row)
// before batch_accepted (a resend while the first copy is stored gets the first copy's answer);
// at most net::kStreamedBatchesAhead held; a batch is deleted when its round commits, the rest
// when the job ends; a restarted node reloads them. Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "goblin/net/messages/train_data_messages.hpp"
#include "kinds/train/training_job.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/researcher_desk.hpp"
#include "work/job_kind.hpp"

namespace goblin::labnode {

class StreamedBatches {
public:
    struct Hooks {
        // The researcher's running or ended job, or null (unknown, released, another's).
        std::function<TrainingJob*(const std::string& jobId)> find;
        std::function<void(TrainingJob&)> startRound; // the batch its round waited for came
        std::function<void(TrainingJob&)> dataEnded;  // it ended where the next round would start
    };

    StreamedBatches(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk, Hooks hooks);

    // train_batch: answered batch_accepted once durable, or an error the desk answers.
    Expected<void> receive(const ResearcherRequest& request, net::TrainBatch batch);
    // After a restart: the job's held batches and where its data ended.
    void load(TrainingJob& job);
    // The batch's round committed.
    void dropTrained(TrainingJob& job, std::int64_t batch);
    // The job ended: every batch it held.
    void dropAll(TrainingJob& job);

private:
    void onStored(const ResearcherRequest& request, const std::string& jobId, std::int64_t batch,
                  Expected<std::string> stored);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    Hooks m_hooks;
    // Batches a worker stores now, by (job, batch): the resends of each that wait for its answer.
    std::map<std::pair<std::string, std::int64_t>, std::vector<ResearcherRequest>> m_storing;
};

} // namespace goblin::labnode
