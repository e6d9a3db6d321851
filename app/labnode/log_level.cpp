#include "log_level.hpp"

#include <array>

namespace goblin::labnode {
namespace {

constexpr std::array<std::string_view, 3> kErrors{"could not", "cannot ", "not purged"};
constexpr std::array<std::string_view, 14> kWarnings{
    "REJECTED",       "quarantine",       "banned",  " ban",     "refused",
    "refuses",        " failed",          "expired", " waits: ", "unauthenticated",
    "limit_exceeded", "version_mismatch", "wrong",   "lied"};

template <std::size_t N>
bool mentions(std::string_view line, const std::array<std::string_view, N>& words) {
    for (std::string_view word : words)
        if (line.find(word) != std::string_view::npos)
            return true;
    return false;
}

} // namespace

LogLevel logLevelOf(std::string_view line) {
    // A volunteer that leaves (its close reason quoted) is ordinary; a banned one is not.
    if (line.find(" disconnected (") != std::string_view::npos &&
        line.find("banned") == std::string_view::npos)
        return LogLevel::Info;
    if (mentions(line, kErrors))
        return LogLevel::Error;
    if (mentions(line, kWarnings))
        return LogLevel::Warning;
    return LogLevel::Info;
}

std::string_view logLevelName(LogLevel level) {
    switch (level) {
    case LogLevel::Error:
        return "error";
    case LogLevel::Warning:
        return "warning";
    case LogLevel::Info:
        break;
    }
    return "info";
}

} // namespace goblin::labnode
