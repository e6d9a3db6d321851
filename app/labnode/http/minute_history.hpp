// Counts per minute over the last hour, by series name ("accepted matmul", "rejected graph", …):
// one ring of 60 buckets per series, each bucket stamped with the minute it counts, so a bucket
// last written an hour or more ago reads as zero. The clock (wall seconds) is injected. In memory
// only: the history starts empty when the node starts. Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace goblin::labnode {

class MinuteHistory {
public:
    static constexpr int kMinutes = 60;
    // New names beyond this many are not counted, so callers cannot grow the map without bound.
    static constexpr std::size_t kMaxSeries = 32;

    explicit MinuteHistory(std::function<double()> wallSeconds);

    // Adds `count` to `series` in the current minute. False when the series is new and
    // kMaxSeries series exist already (nothing counted).
    bool add(const std::string& series, std::uint64_t count = 1);

    struct Window {
        double firstMinute = 0; // epoch seconds of the oldest minute shown (a multiple of 60)
        // Per series, kMinutes counts, the oldest minute first and the current minute last.
        std::map<std::string, std::vector<std::uint64_t>> series;
    };
    // The last kMinutes minutes, the current one included; every series ever counted is listed
    // (all zeros once its counts are an hour old).
    Window window() const;

private:
    struct Bucket {
        std::int64_t minute = 0;
        std::uint64_t count = 0;
    };
    using Ring = std::vector<Bucket>;

    std::int64_t currentMinute() const;
    static std::size_t slot(std::int64_t minute);

    std::function<double()> m_wallSeconds;
    std::map<std::string, Ring> m_series;
};

} // namespace goblin::labnode
