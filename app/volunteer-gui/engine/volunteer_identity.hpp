// The volunteer's identity per lab node (id + secret the node issued), kept in a JSON file in the
// volunteer's config folder with owner-only permissions. Used by the engine thread only.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::volunteer {

struct VolunteerIdentity {
    std::string volunteerId;
    std::string secret;
};

class IdentityFile {
public:
    explicit IdentityFile(std::filesystem::path configDir);

    std::optional<VolunteerIdentity> load(const std::string& nodeUrl) const;
    Expected<void> save(const std::string& nodeUrl, const VolunteerIdentity& identity) const;
    Expected<void> forget(const std::string& nodeUrl) const;
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

} // namespace goblin::volunteer
