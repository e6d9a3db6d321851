// One lab node per database: an exclusive flock on a lock file (`<db>.lock`, `<data-dir>/.lock`)
// held for as long as the NodeLock lives; the file names its owner (pid, address) so a second
// `serve` can say which node it found. Owned by `serve`'s main thread.
#pragma once

#include <filesystem>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

class NodeLock {
public:
    // Takes the lock or fails at once (never waits). `guarded` names what the lock protects, for
    // the refusal message, which quotes the running node's description.
    [[nodiscard]] static Expected<NodeLock> acquire(const std::filesystem::path& lockFile,
                                                    const std::string& guarded);
    ~NodeLock();
    NodeLock(NodeLock&& other) noexcept;
    NodeLock(const NodeLock&) = delete;
    NodeLock& operator=(const NodeLock&) = delete;
    NodeLock& operator=(NodeLock&&) = delete;

    // Replaces the owner description in the lock file (after `listen` knows the port).
    void describe(const std::string& owner);
    const std::filesystem::path& path() const { return m_path; }

private:
    NodeLock(int fd, std::filesystem::path path) : m_fd(fd), m_path(std::move(path)) {}
    int m_fd = -1;
    std::filesystem::path m_path;
};

// "pid 123, listening on 127.0.0.1:7000": what a lock file says about its owner.
std::string nodeOwnerDescription(const std::string& address);

} // namespace goblin::labnode
