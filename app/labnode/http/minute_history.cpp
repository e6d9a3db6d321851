#include "http/minute_history.hpp"

#include <cmath>
#include <limits>

namespace goblin::labnode {

MinuteHistory::MinuteHistory(std::function<double()> wallSeconds)
    : m_wallSeconds(std::move(wallSeconds)) {}

std::int64_t MinuteHistory::currentMinute() const {
    return static_cast<std::int64_t>(std::floor(m_wallSeconds() / 60.0));
}

std::size_t MinuteHistory::slot(std::int64_t minute) {
    // Minutes before 1970 (a clock set wrong) still land in a valid slot.
    const std::int64_t remainder = minute % kMinutes;
    return static_cast<std::size_t>(remainder < 0 ? remainder + kMinutes : remainder);
}

bool MinuteHistory::add(const std::string& series, std::uint64_t count) {
    auto it = m_series.find(series);
    if (it == m_series.end()) {
        if (m_series.size() >= kMaxSeries)
            return false;
        // A stamp no real minute has, so fresh buckets read as empty.
        const Bucket unused{std::numeric_limits<std::int64_t>::min(), 0};
        it = m_series.emplace(series, Ring(kMinutes, unused)).first;
    }
    const std::int64_t minute = currentMinute();
    Bucket& bucket = it->second[slot(minute)];
    if (bucket.minute != minute)
        bucket = Bucket{minute, 0};
    bucket.count += count;
    return true;
}

MinuteHistory::Window MinuteHistory::window() const {
    const std::int64_t last = currentMinute();
    const std::int64_t first = last - (kMinutes - 1);
    Window window;
    window.firstMinute = static_cast<double>(first) * 60.0;
    for (const auto& [name, ring] : m_series) {
        std::vector<std::uint64_t> counts(kMinutes, 0);
        for (std::int64_t minute = first; minute <= last; ++minute) {
            const Bucket& bucket = ring[slot(minute)];
            if (bucket.minute == minute)
                counts[static_cast<std::size_t>(minute - first)] = bucket.count;
        }
        window.series.emplace(name, std::move(counts));
    }
    return window;
}

} // namespace goblin::labnode
