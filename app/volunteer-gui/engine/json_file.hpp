// Small JSON files in the volunteer's config folder (identity, GPU tuning): read as an object
// (empty when missing or corrupt) and written atomically (temporary file, then rename) with
// owner-only permissions. Any thread; callers serialise writes to one file.
#pragma once

#include <filesystem>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"

namespace goblin::volunteer {

boost::json::object readJsonObject(const std::filesystem::path& path);
Expected<void> writeJsonObject(const std::filesystem::path& path,
                               const boost::json::object& content);

} // namespace goblin::volunteer
