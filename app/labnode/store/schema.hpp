// The lab node's SQLite schema in one place: every CREATE TABLE and index of every store unit, and
// the migrations from older versions. Core thread (or a staff command's own connection).
#pragma once

#include "goblin/core/error.hpp"
#include "store/database.hpp"

namespace goblin::labnode {

inline constexpr int kSchemaVersion = 5;

// Creates what is missing and migrates an older database to kSchemaVersion, in one transaction
// per step; an error for a database newer than this node.
Expected<void> migrateSchema(Database& db);

} // namespace goblin::labnode
