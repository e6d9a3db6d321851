#include "store/node_settings.hpp"

namespace goblin::labnode {

Expected<void> setNodeSetting(Database& db, const std::string& key, const std::string& value) {
    auto upsert = db.prepare("INSERT INTO node_settings(key, value) VALUES(?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    return upsert.bind(1, key).bind(2, value).run();
}

std::optional<std::string> nodeSetting(Database& db, const std::string& key) {
    auto query = db.prepare("SELECT value FROM node_settings WHERE key = ?");
    query.bind(1, key);
    if (!query.step().value_or(false))
        return std::nullopt;
    return query.columnText(0);
}

} // namespace goblin::labnode
