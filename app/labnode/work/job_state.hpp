// The one job lifecycle every kind shares: running → done | failed | cancelled → released (or
// retained: released, its data kept for audits) → purged (its rows deleted). The names are the
// ones stored in SQLite and sent to researchers and lab staff. Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace goblin::labnode {

enum class JobState { Running, Done, Failed, Cancelled, Retained, Released };

std::string_view jobStateName(JobState state);
// The state a stored name means; nullopt for a name no state has.
std::optional<JobState> parseJobState(std::string_view name);
// The state of a row read from the store; a name no state has (a damaged row) reads as failed, so
// the job is neither resumed nor delivered.
JobState storedJobState(std::string_view name);
// Whether a job may go from `from` to `to` (the lifecycle's table).
bool mayChange(JobState from, JobState to);
// Done, failed or cancelled: it computes no more and waits for its researcher's release.
bool hasEnded(JobState state);

} // namespace goblin::labnode
