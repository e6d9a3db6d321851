#include "node/node_lock.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace goblin::labnode {
namespace {

std::string readOwner(int fd) {
    char buffer[512];
    const ssize_t got = pread(fd, buffer, sizeof buffer - 1, 0);
    if (got <= 0)
        return "owner unknown";
    std::string owner(buffer, static_cast<std::size_t>(got));
    while (!owner.empty() && (owner.back() == '\n' || owner.back() == '\r'))
        owner.pop_back();
    return owner.empty() ? std::string("owner unknown") : owner;
}

} // namespace

std::string nodeOwnerDescription(const std::string& address) {
    std::string owner = "pid ";
    owner.append(std::to_string(getpid())).append(", ").append(address);
    return owner;
}

Expected<NodeLock> NodeLock::acquire(const std::filesystem::path& lockFile,
                                     const std::string& guarded) {
    const int fd = open(lockFile.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        std::string message = "cannot open lock file ";
        message.append(lockFile.string()).append(": ").append(std::strerror(errno));
        return makeError(ErrorCode::Internal, message);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int why = errno;
        std::string message;
        if (why == EWOULDBLOCK) {
            message = "another goblin-labnode (";
            message.append(readOwner(fd)).append(") is serving ").append(guarded);
            message.append("; lock file ").append(lockFile.string());
        } else {
            message = "cannot lock ";
            message.append(lockFile.string()).append(": ").append(std::strerror(why));
        }
        close(fd);
        return makeError(ErrorCode::InvalidInput, message);
    }
    NodeLock lock(fd, lockFile);
    lock.describe(nodeOwnerDescription("starting"));
    return lock;
}

NodeLock::NodeLock(NodeLock&& other) noexcept : m_fd(other.m_fd), m_path(std::move(other.m_path)) {
    other.m_fd = -1;
}

NodeLock::~NodeLock() {
    // The file stays: removing it would let a third node lock a new file while a second one still
    // holds the old one's descriptor. Closing releases the flock.
    if (m_fd >= 0)
        close(m_fd);
}

void NodeLock::describe(const std::string& owner) {
    std::string text = owner;
    text.push_back('\n');
    if (ftruncate(m_fd, 0) != 0)
        return; // the description is a courtesy; the flock is what guards the database
    (void)!pwrite(m_fd, text.data(), text.size(), 0);
}

} // namespace goblin::labnode
