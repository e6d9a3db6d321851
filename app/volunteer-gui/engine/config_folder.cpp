#include "config_folder.hpp"

#include <cstdlib>
#include <system_error>

namespace goblin::volunteer {

namespace fs = std::filesystem;

namespace {

fs::path configHome() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
        return xdg;
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".config";
    return {};
}

} // namespace

fs::path defaultConfigDir() {
    const fs::path home = configHome();
    return home.empty() ? fs::current_path() / ".goblin-volunteer" : home / "goblin-volunteer";
}

fs::path settingsFile(const fs::path& configDir) {
    return configDir / "settings.conf";
}

fs::path legacySettingsFile() {
    const fs::path home = configHome();
    return home.empty() ? fs::path() : home / "gpu-goblin" / "goblin-volunteer.conf";
}

Expected<std::string> migrateLegacySettings(const fs::path& configDir, const fs::path& legacy) {
    std::error_code ec;
    const fs::path target = settingsFile(configDir);
    if (legacy.empty() || !fs::is_regular_file(legacy, ec) || fs::exists(target, ec))
        return std::string();
    fs::create_directories(configDir, ec);
    if (ec)
        return makeError(ErrorCode::Internal,
                         "cannot create " + configDir.string() + ": " + ec.message());
    fs::rename(legacy, target, ec);
    if (ec) { // another file system: copy, then remove the old one
        ec.clear();
        fs::copy_file(legacy, target, ec);
        if (ec)
            return makeError(ErrorCode::Internal, "cannot move the settings " + legacy.string() +
                                                      " to " + target.string() + ": " +
                                                      ec.message());
        fs::remove(legacy, ec);
    }
    fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, ec);
    fs::remove(legacy.parent_path(), ec); // only succeeds when it is empty now
    return "moved the settings from " + legacy.string() + " to " + target.string() +
           ": one folder now holds the settings and the identity";
}

} // namespace goblin::volunteer
