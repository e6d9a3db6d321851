#include "volunteer_identity.hpp"

#include <boost/json.hpp>

#include "json_file.hpp"

namespace goblin::volunteer {

namespace json = boost::json;
namespace fs = std::filesystem;

IdentityFile::IdentityFile(fs::path configDir) : m_path(std::move(configDir) / "identity.json") {}

std::optional<VolunteerIdentity> IdentityFile::load(const std::string& nodeUrl) const {
    const json::object all = readJsonObject(m_path);
    const auto* nodes = all.if_contains("nodes");
    if (!nodes || !nodes->is_object())
        return std::nullopt;
    const auto* entry = nodes->get_object().if_contains(nodeUrl);
    if (!entry || !entry->is_object())
        return std::nullopt;
    const auto* id = entry->get_object().if_contains("volunteer");
    const auto* secret = entry->get_object().if_contains("secret");
    if (!id || !secret || !id->is_string() || !secret->is_string())
        return std::nullopt;
    return VolunteerIdentity{std::string(id->get_string()), std::string(secret->get_string())};
}

Expected<void> IdentityFile::save(const std::string& nodeUrl,
                                  const VolunteerIdentity& identity) const {
    json::object all = readJsonObject(m_path);
    if (!all.contains("nodes") || !all["nodes"].is_object())
        all["nodes"] = json::object{};
    all["nodes"].get_object()[nodeUrl] =
        json::object{{"volunteer", identity.volunteerId}, {"secret", identity.secret}};
    return writeJsonObject(m_path, all);
}

Expected<void> IdentityFile::forget(const std::string& nodeUrl) const {
    json::object all = readJsonObject(m_path);
    if (auto* nodes = all.if_contains("nodes"); nodes && nodes->is_object())
        nodes->get_object().erase(nodeUrl);
    return writeJsonObject(m_path, all);
}

} // namespace goblin::volunteer
