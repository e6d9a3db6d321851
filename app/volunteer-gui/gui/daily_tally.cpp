#include "daily_tally.hpp"

#include <QDate>

#include <utility>

namespace goblin::volunteer {

bool DailyTally::count(const EngineCounters& counters) {
    const QString today = QDate::currentDate().toString(Qt::ISODate);
    if (m_store.value(QStringLiteral("tally/day")).toString() != today) {
        m_store.setValue(QStringLiteral("tally/day"), today);
        m_store.setValue(QStringLiteral("tally/tasks_today"), 0);
        m_store.setValue(QStringLiteral("tally/bytes_today"), 0);
    }
    const std::int64_t tasks = counters.computed - m_seenTasks;
    const std::int64_t bytes = counters.bytesReceived + counters.bytesSent - m_seenBytes;
    m_seenTasks = counters.computed;
    m_seenBytes += bytes;
    if (tasks == 0 && bytes == 0)
        return false;
    for (const auto& [key, delta] : {std::pair{QStringLiteral("tally/tasks_today"), tasks},
                                     std::pair{QStringLiteral("tally/tasks_total"), tasks},
                                     std::pair{QStringLiteral("tally/bytes_today"), bytes}})
        m_store.setValue(key, m_store.value(key).toLongLong() + delta);
    return true;
}

std::int64_t DailyTally::tasksToday() const {
    return m_store.value(QStringLiteral("tally/tasks_today")).toLongLong();
}

std::int64_t DailyTally::tasksTotal() const {
    return m_store.value(QStringLiteral("tally/tasks_total")).toLongLong();
}

std::int64_t DailyTally::bytesToday() const {
    return m_store.value(QStringLiteral("tally/bytes_today")).toLongLong();
}

} // namespace goblin::volunteer
