#include "host_readings.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace goblin::volunteer {
namespace {

namespace fs = std::filesystem;

// The first line of a small sysfs file, without surrounding blanks; empty when unreadable.
std::string readLine(const fs::path& path) {
    std::ifstream file(path);
    std::string line;
    if (!file || !std::getline(file, line))
        return {};
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos)
        return {};
    const auto last = line.find_last_not_of(" \t\r");
    return line.substr(first, last - first + 1);
}

std::optional<int> parseInt(const std::string& text) {
    int value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end)
        return std::nullopt;
    return value;
}

std::vector<fs::path> sortedSubfolders(const fs::path& root) {
    std::vector<fs::path> folders;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec))
            folders.push_back(it->path());
    std::sort(folders.begin(), folders.end());
    return folders;
}

} // namespace

void readPowerSupply(const fs::path& root, HostState& host) {
    bool mainsOnline = false;
    bool discharging = false;
    for (const fs::path& supply : sortedSubfolders(root)) {
        const std::string type = readLine(supply / "type");
        if (type == "Mains" && readLine(supply / "online") == "1")
            mainsOnline = true;
        if (type != "Battery" || readLine(supply / "present") == "0")
            continue;
        if (const auto level = parseInt(readLine(supply / "capacity"));
            level && !host.batteryPercent)
            host.batteryPercent = std::clamp(*level, 0, 100);
        if (readLine(supply / "status") == "Discharging")
            discharging = true;
    }
    host.onBattery = discharging && !mainsOnline;
}

double memoryUsedPercent(const fs::path& meminfo) {
    std::ifstream file(meminfo);
    double total = 0, available = 0;
    std::string line;
    while (std::getline(file, line)) {
        std::istringstream fields(line);
        std::string key;
        double kib = 0;
        if (!(fields >> key >> kib))
            continue;
        if (key == "MemTotal:")
            total = kib;
        else if (key == "MemAvailable:")
            available = kib;
    }
    return total > 0 ? 100.0 * (total - available) / total : 0;
}

} // namespace goblin::volunteer
