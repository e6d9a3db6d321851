// Liveness of tasks of replicas: a task that holds one volunteer's opinion and wants another that
// no connected volunteer may give (only volunteers that computed it are connected, the others lend
// too little memory or may not take it again) waits a bounded time, then the node decides it with
// its own computation instead of letting the job stall. This unit only keeps the clock of each such
// task; the kind says which tasks starve and acts on what it returns. Pure; core thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace goblin::labnode {

class SecondOpinionWatch {
public:
    struct Starving {
        double since = 0;
        std::string why; // what it waits for, for the researcher's progress and the log
    };

    explicit SecondOpinionWatch(double waitSeconds) : m_wait(waitSeconds) {}

    // The tasks that starve at `now`, with why; a task not named no longer starves and is
    // forgotten. Returns the tasks that have starved `waitSeconds` or more, each once (they are
    // forgotten too: the node decides them).
    std::vector<std::int64_t> update(const std::map<std::int64_t, std::string>& starving,
                                     double now);
    // Since when and why the task starves; nullopt when it does not.
    std::optional<Starving> starving(std::int64_t task) const;
    double waitSeconds() const { return m_wait; }

private:
    double m_wait;
    std::map<std::int64_t, Starving> m_starving;
};

} // namespace goblin::labnode
