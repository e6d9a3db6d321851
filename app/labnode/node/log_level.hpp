// The node's log (`serve`'s stdout: "<UTC time> <level> <message>"). Each role says the level of
// what it logs: error for what the node could not do (a write that failed, a job it cannot
// resume), warning for what lab staff should look at (rejected results, quarantines, bans,
// refusals, failed jobs, expired leases, jobs nothing computes), info for the rest. Copyable
// value; its sink decides which thread writes.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace goblin::labnode {

enum class LogLevel { Info, Warning, Error };

std::string_view logLevelName(LogLevel level); // "info", "warning", "error"

using LevelledSink = std::function<void(LogLevel, const std::string&)>;

class NodeLog {
public:
    NodeLog() = default;
    explicit NodeLog(LevelledSink sink) : m_sink(std::move(sink)) {}
    // A sink of plain lines (tests that collect what is logged): the level is dropped.
    template <class Plain>
    requires std::is_invocable_v<Plain, const std::string&>
    NodeLog(Plain plain) // NOLINT: implicit on purpose, as a plain sink converts
        : m_sink([plain = std::move(plain)](LogLevel, const std::string& line) { plain(line); }) {}

    void operator()(const std::string& line) const { write(LogLevel::Info, line); }
    void warn(const std::string& line) const { write(LogLevel::Warning, line); }
    void error(const std::string& line) const { write(LogLevel::Error, line); }
    void write(LogLevel level, const std::string& line) const {
        if (m_sink)
            m_sink(level, line);
    }

private:
    LevelledSink m_sink;
};

} // namespace goblin::labnode
