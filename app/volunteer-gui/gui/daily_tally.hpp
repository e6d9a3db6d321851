// The day's tallies of the engines' work, kept in the app's settings store (GUI thread; owned by
// VolunteerApp): tasks today and in all, network bytes today. Each status adds what the engines'
// counters gained since the last one; a new day starts today's counts at zero.
#pragma once

#include <QSettings>

#include <cstdint>

#include "engine_status.hpp"

namespace goblin::volunteer {

class DailyTally {
public:
    explicit DailyTally(QSettings& store) : m_store(store) {}
    // From each status (the engines' counters, summed); true when a tally grew.
    bool count(const EngineCounters& counters);
    // The engines restarted: their counters start again from zero.
    void restart() { m_seenTasks = m_seenBytes = 0; }
    std::int64_t tasksToday() const;
    std::int64_t tasksTotal() const;
    std::int64_t bytesToday() const;

private:
    QSettings& m_store;
    std::int64_t m_seenTasks = 0, m_seenBytes = 0;
};

} // namespace goblin::volunteer
