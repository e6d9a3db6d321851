// What a front end may observe of the engine: link state, counters, the task in progress. A plain
// snapshot the engine fills on its io thread and hands out by value.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace goblin::volunteer {

struct EngineCounters {
    std::int64_t computed = 0, accepted = 0, rejected = 0, stale = 0, failed = 0;
    double computeSeconds = 0;                     // time spent computing tasks
    std::int64_t bytesReceived = 0, bytesSent = 0; // tensor bytes of tasks and results
};

// Released: paused long enough that the engine hung up, so the node gives its tasks to others;
// it reconnects on resume.
enum class LinkState { Connecting, Connected, Disconnected, Released, Refused, Stopped };

struct TaskProgress {
    std::int64_t task = 0;
    double fraction = 0; // of the task's slices done
};

struct EngineStatus {
    LinkState link = LinkState::Connecting;
    std::string lastError;   // why the link last failed or closed; empty when none
    std::string volunteerId; // once welcomed
    std::string backend;     // e.g. "cpu-eigen"
    EngineCounters counters;
    int tasksOpen = 0;                   // received, not yet finished
    std::optional<TaskProgress> running; // the task the compute thread is on
    bool parked = false;                 // the compute thread waits for a resume
    // While Disconnected: the back-off before the next attempt.
    std::chrono::milliseconds retryDelay{0};
};

} // namespace goblin::volunteer
