// The honest /healthz: the database commits a tiny write transaction and the disks of the data
// directory and of the database (WAL growth needs room too) have more than a small free-space
// floor. The free-space probe is injected (statvfs by default) so tests can show a full disk. Core
// thread (it writes through the node's connection).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

class Database;

// Bytes available to the node on the file system holding `path`.
using FreeSpaceProbe = std::function<Expected<std::uint64_t>(const std::filesystem::path& path)>;
Expected<std::uint64_t> statvfsFreeBytes(const std::filesystem::path& path);

inline constexpr std::uint64_t kMinFreeBytes = std::uint64_t{64} << 20;

class HealthProbe {
public:
    // Watches `dataDir` and the database file's directory.
    HealthProbe(Database& db, const std::filesystem::path& dataDir,
                FreeSpaceProbe freeSpace = statvfsFreeBytes,
                std::uint64_t minFreeBytes = kMinFreeBytes);

    // Nothing when healthy, otherwise why not (one line, no secrets).
    std::optional<std::string> problem();

private:
    std::optional<std::string> commitProblem();

    Database& m_db;
    std::vector<std::filesystem::path> m_directories;
    FreeSpaceProbe m_freeSpace;
    std::uint64_t m_minFreeBytes;
    std::int64_t m_probes = 0;
};

} // namespace goblin::labnode
