#include "daily_tally.hpp"

#include <QDate>

#include <utility>

namespace goblin::volunteer {

namespace {

const QString kDay = QStringLiteral("tally/day");
const QString kTasksToday = QStringLiteral("tally/tasks_today");
const QString kTasksTotal = QStringLiteral("tally/tasks_total");
const QString kBytesToday = QStringLiteral("tally/bytes_today");
const QString kAccepted = QStringLiteral("tally/accepted_total");
const QString kRejected = QStringLiteral("tally/rejected_total");
const QString kComputeSeconds = QStringLiteral("tally/compute_seconds_total");

} // namespace

bool DailyTally::count(const EngineCounters& counters) {
    const QString today = QDate::currentDate().toString(Qt::ISODate);
    if (m_store.value(kDay).toString() != today) {
        m_store.setValue(kDay, today);
        m_store.setValue(kTasksToday, 0);
        m_store.setValue(kBytesToday, 0);
    }
    const std::int64_t tasks = counters.computed - m_seen.computed;
    const std::int64_t bytes =
        counters.bytesReceived + counters.bytesSent - (m_seen.bytesReceived + m_seen.bytesSent);
    const std::int64_t accepted = counters.accepted - m_seen.accepted;
    const std::int64_t rejected = counters.rejected - m_seen.rejected;
    const double seconds = counters.computeSeconds - m_seen.computeSeconds;
    m_seen = counters;
    if (tasks == 0 && bytes == 0 && accepted == 0 && rejected == 0 && seconds == 0)
        return false;
    for (const auto& [key, delta] : {std::pair{kTasksToday, tasks}, std::pair{kTasksTotal, tasks},
                                     std::pair{kBytesToday, bytes}, std::pair{kAccepted, accepted},
                                     std::pair{kRejected, rejected}})
        m_store.setValue(key, m_store.value(key).toLongLong() + delta);
    m_store.setValue(kComputeSeconds, m_store.value(kComputeSeconds).toDouble() + seconds);
    return true;
}

std::int64_t DailyTally::tasksToday() const {
    return m_store.value(kTasksToday).toLongLong();
}

std::int64_t DailyTally::tasksTotal() const {
    return m_store.value(kTasksTotal).toLongLong();
}

std::int64_t DailyTally::bytesToday() const {
    return m_store.value(kBytesToday).toLongLong();
}

TallyTotals DailyTally::totals() const {
    return TallyTotals{tasksToday(), tasksTotal(), m_store.value(kAccepted).toLongLong(),
                       m_store.value(kRejected).toLongLong(),
                       m_store.value(kComputeSeconds).toDouble()};
}

} // namespace goblin::volunteer
