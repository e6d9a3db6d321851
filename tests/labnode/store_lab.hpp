// The fixture of the store tests: a node's store on a real SQLite file in a fresh temporary
// folder, with one researcher (0 if it could not be added, which the first insert then fails on).
#pragma once

#include <QTemporaryDir>

#include <cstdint>

#include "store/node_store.hpp"

namespace goblin::labnode::testing {

struct StoreLab {
    QTemporaryDir dir;
    NodeStore store{dir.filePath("node.db").toStdString()};
    Database& db = store.database();
    std::int64_t researcher = store.addResearcher("ada@lab.example", "hash").value_or(0);
};

} // namespace goblin::labnode::testing
