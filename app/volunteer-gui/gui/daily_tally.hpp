// The volunteer's tallies of the engines' work, kept in the app's settings store (GUI thread;
// owned by VolunteerApp): tasks today and in all, accepted and rejected results and compute time
// in all, network bytes today. Each status adds what the engines' counters gained since the last
// one (engines count from zero at every start), so the status page's totals all come from here
// and agree after a restart; a new day starts today's counts at zero.
#pragma once

#include <QSettings>

#include <cstdint>

#include "engine_status.hpp"

namespace goblin::volunteer {

struct TallyTotals {
    std::int64_t tasksToday = 0, tasksTotal = 0;
    std::int64_t acceptedTotal = 0, rejectedTotal = 0;
    double computeSecondsTotal = 0;
};

class DailyTally {
public:
    explicit DailyTally(QSettings& store) : m_store(store) {}
    // From each status (the engines' counters, summed); true when a tally grew.
    bool count(const EngineCounters& counters);
    // The engines restarted: their counters start again from zero.
    void restart() { m_seen = EngineCounters{}; }
    std::int64_t tasksToday() const;
    std::int64_t tasksTotal() const;
    std::int64_t bytesToday() const;
    TallyTotals totals() const;

private:
    QSettings& m_store;
    EngineCounters m_seen;
};

} // namespace goblin::volunteer
