#include "tty_idle.hpp"

#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include <signal.h>
#include <sys/stat.h>
#include <utmpx.h>

namespace goblin::volunteer {
namespace {

namespace fs = std::filesystem;

double systemNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool processAlive(pid_t pid) {
    return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

// The terminal of a user session as a path under `dev`; empty for a line that names no device
// (":0" of an X login) or would leave `dev`.
fs::path terminalOf(const utmpx& entry, const fs::path& dev) {
    char line[sizeof entry.ut_line + 1] = {};
    std::memcpy(line, entry.ut_line, sizeof entry.ut_line);
    const std::string name(line);
    if (name.empty() || name.front() == ':' || name.find("..") != std::string::npos)
        return {};
    return dev / name;
}

std::optional<double> accessTime(const fs::path& path) {
    struct stat info {};
    if (path.empty() || ::stat(path.c_str(), &info) != 0)
        return std::nullopt;
    return static_cast<double>(info.st_atim.tv_sec) +
           static_cast<double>(info.st_atim.tv_nsec) / 1e9;
}

} // namespace

std::optional<TtyIdle> ttyIdle(const TtyIdleSources& sources) {
    TtyIdle idle{std::numeric_limits<double>::infinity(), 0};
    std::error_code ec;
    if (!fs::exists(sources.utmp, ec))
        return idle;
    std::ifstream file(sources.utmp, std::ios::binary);
    if (!file)
        return std::nullopt;
    const double now = sources.now ? sources.now() : systemNow();
    // utmp is an array of utmpx records; a session ended uncleanly may leave a USER_PROCESS
    // record behind, so only sessions whose process still runs count.
    utmpx entry{};
    while (file.read(reinterpret_cast<char*>(&entry), sizeof entry)) {
        if (entry.ut_type != USER_PROCESS || !processAlive(entry.ut_pid))
            continue;
        const auto atime = accessTime(terminalOf(entry, sources.dev));
        if (!atime)
            continue;
        ++idle.sessions;
        idle.seconds = std::min(idle.seconds, std::max(0.0, now - *atime));
    }
    return idle;
}

std::string describe(const TtyIdle& idle) {
    if (idle.sessions == 0)
        return "no user logged in on a terminal (utmp)";
    return "terminal input of " + std::to_string(idle.sessions) + " logged-in session(s) (utmp)";
}

} // namespace goblin::volunteer
