#include "volunteer_identity.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <sys/stat.h>

namespace goblin::volunteer {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

json::object readAll(const fs::path& path) {
    std::ifstream in(path);
    if (!in)
        return {};
    std::stringstream text;
    text << in.rdbuf();
    boost::system::error_code ec;
    json::value value = json::parse(text.str(), ec);
    if (ec || !value.is_object())
        return {};
    return value.get_object();
}

Expected<void> writeAll(const fs::path& path, const json::object& content) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const fs::path temporary = path.string() + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out)
            return makeError(ErrorCode::Internal, "cannot write " + temporary.string());
        out << json::serialize(content) << '\n';
    }
    ::chmod(temporary.c_str(), 0600);
    fs::rename(temporary, path, ec);
    if (ec)
        return makeError(ErrorCode::Internal, "cannot save " + path.string() + ": " + ec.message());
    return {};
}

} // namespace

IdentityFile::IdentityFile(fs::path configDir) : m_path(std::move(configDir) / "identity.json") {}

std::optional<VolunteerIdentity> IdentityFile::load(const std::string& nodeUrl) const {
    const json::object all = readAll(m_path);
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

Expected<void> IdentityFile::save(const std::string& nodeUrl, const VolunteerIdentity& identity) const {
    json::object all = readAll(m_path);
    if (!all.contains("nodes") || !all["nodes"].is_object())
        all["nodes"] = json::object{};
    all["nodes"].get_object()[nodeUrl] =
        json::object{{"volunteer", identity.volunteerId}, {"secret", identity.secret}};
    return writeAll(m_path, all);
}

Expected<void> IdentityFile::forget(const std::string& nodeUrl) const {
    json::object all = readAll(m_path);
    if (auto* nodes = all.if_contains("nodes"); nodes && nodes->is_object())
        nodes->get_object().erase(nodeUrl);
    return writeAll(m_path, all);
}

} // namespace goblin::volunteer
