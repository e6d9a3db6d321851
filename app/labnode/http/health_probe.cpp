#include "http/health_probe.hpp"

#include <cerrno>
#include <cstring>

#include <sys/statvfs.h>

#include "store/database.hpp"

namespace goblin::labnode {

Expected<std::uint64_t> statvfsFreeBytes(const std::filesystem::path& path) {
    struct statvfs info {};
    if (::statvfs(path.c_str(), &info) != 0)
        return tl::unexpected(Error{ErrorCode::Internal, std::strerror(errno)});
    return static_cast<std::uint64_t>(info.f_bavail) * static_cast<std::uint64_t>(info.f_frsize);
}

HealthProbe::HealthProbe(Database& db, const std::filesystem::path& dataDir,
                         FreeSpaceProbe freeSpace, std::uint64_t minFreeBytes)
    : m_db(db), m_directories{dataDir}, m_freeSpace(std::move(freeSpace)),
      m_minFreeBytes(minFreeBytes) {
    const std::string file = db.filename();
    if (file.empty())
        return; // in memory
    const auto directory = std::filesystem::path(file).parent_path();
    std::error_code ignored;
    if (!std::filesystem::equivalent(directory, dataDir, ignored))
        m_directories.push_back(directory);
}

std::optional<std::string> HealthProbe::problem() {
    if (auto problem = commitProblem())
        return problem;
    for (const auto& directory : m_directories) {
        const auto free = m_freeSpace(directory);
        if (!free) {
            std::string reason = "cannot check free space of ";
            return reason.append(directory.string()).append(": ").append(free.error().message);
        }
        if (*free >= m_minFreeBytes)
            continue;
        std::string reason = "disk almost full: ";
        reason.append(std::to_string(*free >> 20))
            .append(" MiB free in ")
            .append(directory.string());
        return reason.append(" (floor ")
            .append(std::to_string(m_minFreeBytes >> 20))
            .append(" MiB)");
    }
    return std::nullopt;
}

std::optional<std::string> HealthProbe::commitProblem() {
    const std::string prefix = "database cannot commit: ";
    auto transaction = Transaction::begin(m_db);
    if (!transaction)
        return std::string(prefix).append(transaction.error().message);
    {
        auto write = m_db.prepare("INSERT OR REPLACE INTO health_probe(id, probes) VALUES(1, ?)");
        if (auto ok = write.bind(1, ++m_probes).run(); !ok)
            return std::string(prefix).append(ok.error().message);
    }
    if (auto ok = transaction->commit(); !ok)
        return std::string(prefix).append(ok.error().message);
    return std::nullopt;
}

} // namespace goblin::labnode
