// User idle time on a machine without a desktop session, measured as `w` does: the sessions of
// logged-in users from the utmp file, and for each the time since its terminal (/dev/<line>) last
// saw input (its access time). Plain functions over injected paths and clock; any one thread.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace goblin::volunteer {

struct TtyIdleSources {
    std::filesystem::path utmp = "/run/utmp";
    std::filesystem::path dev = "/dev";
    // Seconds since the epoch (the clock terminal access times are kept in).
    std::function<double()> now;
};

struct TtyIdle {
    // Seconds since the most recent input on any logged-in user's terminal; +infinity when no
    // user is logged in on a terminal (then nobody can be disturbed).
    double seconds = 0;
    int sessions = 0; // user sessions with a terminal found in utmp
};

// Empty when the utmp file exists but cannot be read (a missing file counts as no sessions).
std::optional<TtyIdle> ttyIdle(const TtyIdleSources& sources);

// Where the idle time came from, for the log: "terminal input of 2 session(s) (utmp)".
std::string describe(const TtyIdle& idle);

} // namespace goblin::volunteer
