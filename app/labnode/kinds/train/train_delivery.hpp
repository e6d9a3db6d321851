// What a training job delivers (docs/protocol.md, "Training"): job_done with its summary (state,
// rounds, history of round records) and its flat parameters, then its optimizer state. Core
// thread (reads the rounds from the store).
#pragma once

#include <cstdint>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/train/training_job.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

// A job released while its data is kept for audits is a done job to its researcher.
JobState researcherState(JobState state);
net::JobDone trainJobDone(Database& db, const TrainingJob& job, std::int64_t requestId);

} // namespace goblin::labnode
