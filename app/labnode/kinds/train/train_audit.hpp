// What audits after delivery found about a training job (docs/protocol.md, "Audits of delivered
// jobs"): the audits of its committed rounds' graph jobs, and those of the rounds whose correction
// made the node train the job again after it ended (a late catch, rewind_store.hpp). Its state:
// "rechecking" while such a retraining runs, "corrected" once it ended (the caller adds the
// parameters and optimizer state as they are now), "unverifiable" when a committed round was
// corrected but not trained again (the job had failed or was cancelled, or its data was streamed)
// or a retraining could not end, else the rounds' own ("clean", "stands"). Core thread.
#pragma once

#include <cstdint>
#include <string>

#include "goblin/net/messages/researcher_messages.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

net::AuditReport trainAuditReport(Database& db, const std::string& jobId, std::int64_t requestId);

} // namespace goblin::labnode
