// The volunteer's one config folder (default $XDG_CONFIG_HOME/goblin-volunteer): the identity
// per lab node, the GEMM tuning and the desktop app's settings file. Earlier versions kept the
// desktop settings apart, where QSettings puts them by default; they move in on first start.
// Plain functions; call before any engine or settings store uses the folder.
#pragma once

#include <filesystem>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::volunteer {

std::filesystem::path defaultConfigDir();

// The desktop app's settings (an INI file QSettings reads and writes).
std::filesystem::path settingsFile(const std::filesystem::path& configDir);

// Where earlier versions kept the desktop app's settings:
// $XDG_CONFIG_HOME/gpu-goblin/goblin-volunteer.conf.
std::filesystem::path legacySettingsFile();

// Moves `legacy` to settingsFile(configDir) when the folder has no settings yet (then removes the
// legacy folder if that left it empty). Returns a line for the log, empty when nothing moved.
Expected<std::string> migrateLegacySettings(const std::filesystem::path& configDir,
                                            const std::filesystem::path& legacy);

} // namespace goblin::volunteer
