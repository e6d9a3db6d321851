// The data folder `serve` uses when no --data-dir is given: one per database, DB.goblin-data
// beside the database DB, so two databases in one folder never share blobs. A goblin-data folder
// beside the database is used when it belongs to this database, or belongs to none yet (the first
// database served beside it claims it). File-system decisions; the main thread of `serve`.
#pragma once

#include <filesystem>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

// The file in a default data folder that names the database it belongs to (its file name).
inline constexpr const char* kDataFolderOwnerFile = ".goblin-database";
inline constexpr const char* kLegacyDataFolderName = "goblin-data";

struct DataFolderChoice {
    std::filesystem::path path;
    std::string why; // for the node's log: "its own", "kept: …"
};

// In order: DB.goblin-data when it exists; goblin-data beside DB when its owner file names DB, or
// when it has no owner file (made by an earlier version: the first database served claims it);
// else DB.goblin-data (made by the caller).
DataFolderChoice defaultDataFolder(const std::filesystem::path& database);

// Writes the owner file into `folder` (which exists) unless it is there already.
[[nodiscard]] Expected<void> claimDataFolder(const std::filesystem::path& folder,
                                             const std::filesystem::path& database);

} // namespace goblin::labnode
