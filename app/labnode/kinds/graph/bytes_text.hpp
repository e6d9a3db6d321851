// Task memory in words for notices: "12 KiB", "3 MiB", rounded up so that a task never looks
// smaller than it is. Pure.
#pragma once

#include <cstdint>
#include <string>

namespace goblin::labnode {

inline std::string bytesRoundedUp(std::int64_t bytes) {
    constexpr std::int64_t kKiB = 1024, kMiB = kKiB * kKiB;
    return bytes >= kMiB ? std::to_string((bytes + kMiB - 1) / kMiB) + " MiB"
                         : std::to_string((bytes + kKiB - 1) / kKiB) + " KiB";
}

} // namespace goblin::labnode
