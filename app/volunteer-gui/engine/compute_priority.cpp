#include "compute_priority.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace goblin::volunteer {
namespace {

constexpr int kLowestNice = 19;
// linux/ioprio.h: the class sits above 13 bits of level; IOPRIO_WHO_PROCESS names one thread.
constexpr int kIoprioClassShift = 13;
constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioWhoProcess = 1;

Error systemError(const std::string& what) {
    return Error{ErrorCode::Internal, what + ": " + std::strerror(errno)};
}

Expected<void> lowerThread(long tid) {
    const auto id = static_cast<id_t>(tid);
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, id);
    if (errno == 0 && nice < kLowestNice && ::setpriority(PRIO_PROCESS, id, kLowestNice) != 0)
        return tl::unexpected(systemError("setpriority(nice 19)"));
    const long idle = long{kIoprioClassIdle} << kIoprioClassShift;
    const long current = ::syscall(SYS_ioprio_get, kIoprioWhoProcess, tid);
    if (current >= 0 && (current >> kIoprioClassShift) == kIoprioClassIdle)
        return {};
    if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, idle) != 0)
        return tl::unexpected(systemError("ioprio_set(idle class)"));
    return {};
}

} // namespace

std::optional<ComputePriority> parseComputePriority(std::string_view text) {
    if (text == "low")
        return ComputePriority::Low;
    if (text == "normal")
        return ComputePriority::Normal;
    return std::nullopt;
}

long currentThreadId() {
    return ::syscall(SYS_gettid);
}

Expected<void> lowerThisThread() {
    return lowerThread(currentThreadId());
}

Expected<int> lowerThreadsExcept(long keep) {
    namespace fs = std::filesystem;
    std::error_code ec;
    int lowered = 0;
    for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename().string();
        char* rest = nullptr;
        const long tid = std::strtol(name.c_str(), &rest, 10);
        if (rest == name.c_str() || *rest != '\0' || tid == keep)
            continue;
        auto done = lowerThread(tid);
        if (!done && errno != ESRCH) // a thread that ended meanwhile is no failure
            return tl::unexpected(done.error());
        lowered += done ? 1 : 0;
    }
    if (ec)
        return makeError(ErrorCode::Internal, "cannot list /proc/self/task: " + ec.message());
    return lowered;
}

void nameThisThread(const std::string& name) {
    ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

} // namespace goblin::volunteer
