#include "work/job_state.hpp"

#include <array>
#include <utility>

namespace goblin::labnode {

namespace {

using S = JobState;

constexpr std::array<std::pair<JobState, std::string_view>, 6> kNames{{
    {S::Running, "running"},
    {S::Done, "done"},
    {S::Failed, "failed"},
    {S::Cancelled, "cancelled"},
    {S::Retained, "retained"},
    {S::Released, "released"},
}};

constexpr std::array<std::pair<JobState, JobState>, 10> kChanges{{
    {S::Running, S::Done},
    {S::Running, S::Failed},
    {S::Running, S::Cancelled},
    {S::Done, S::Released},
    {S::Done, S::Retained},
    {S::Failed, S::Released},
    {S::Failed, S::Retained},
    {S::Cancelled, S::Released},
    {S::Cancelled, S::Retained},
    {S::Retained, S::Released}, // its audit retention ended
}};

} // namespace

std::string_view jobStateName(JobState state) {
    for (const auto& [named, name] : kNames)
        if (named == state)
            return name;
    return "unknown";
}

std::optional<JobState> parseJobState(std::string_view name) {
    for (const auto& [state, stored] : kNames)
        if (stored == name)
            return state;
    return std::nullopt;
}

JobState storedJobState(std::string_view name) {
    return parseJobState(name).value_or(JobState::Failed);
}

bool mayChange(JobState from, JobState to) {
    for (const auto& [a, b] : kChanges)
        if (a == from && b == to)
            return true;
    return false;
}

bool hasEnded(JobState state) {
    return state == S::Done || state == S::Failed || state == S::Cancelled;
}

} // namespace goblin::labnode
