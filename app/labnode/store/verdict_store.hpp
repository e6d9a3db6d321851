// Writes verdict records to the database: matmul verdicts to `results` (a task accepted at most
// once), graph verdicts to `graph_results`, and the volunteer's accepted/rejected counters.
// Called by the VerdictPath inside its transaction. Core thread only, like NodeStore.
#pragma once

#include "goblin/core/error.hpp"
#include "store/database.hpp"
#include "work/verdict.hpp"

namespace goblin::labnode {

[[nodiscard]] Expected<void> recordVerdict(Database& db, const VerdictRecord& verdict, double now);

} // namespace goblin::labnode
