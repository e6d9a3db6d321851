#include "node/log_level.hpp"

namespace goblin::labnode {

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
