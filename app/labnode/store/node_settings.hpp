// Settings the serving node records for the staff commands that read the database offline (the
// volunteer admission mode of the last `serve`, for `volunteers list`). A key-value table; the
// node's core thread or a staff command's own connection.
#pragma once

#include <optional>
#include <string>

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

inline constexpr const char* kVolunteerPolicySetting = "volunteers"; // "open" or "approved"

[[nodiscard]] Expected<void> setNodeSetting(Database& db, const std::string& key,
                                            const std::string& value);
std::optional<std::string> nodeSetting(Database& db, const std::string& key);

} // namespace goblin::labnode
