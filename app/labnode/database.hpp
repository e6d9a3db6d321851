// Thin RAII over SQLite: a connection, prepared statements, and a transaction that rolls back in its
// destructor unless committed. Owned by the node's store thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

class Statement {
public:
    Statement(sqlite3* db, std::string_view sql); // throws std::runtime_error on a bad statement (a bug)
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view value);
    Statement& bindNull(int index);
    // Steps once: true when a row is available.
    Expected<bool> step();
    // Runs to completion, ignoring rows.
    Expected<void> run();
    void reset();

    std::int64_t columnInt(int index) const;
    double columnDouble(int index) const;
    std::string columnText(int index) const;
    bool columnIsNull(int index) const;

private:
    sqlite3* m_db;
    sqlite3_stmt* m_statement = nullptr;
};

class Database {
public:
    // Opens (creating) the file with WAL and synchronous=NORMAL; throws on failure (startup error).
    explicit Database(const std::string& path);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    Expected<void> execute(std::string_view sql);
    Statement prepare(std::string_view sql) { return Statement(m_db, sql); }
    std::int64_t changes() const { return sqlite3_changes(m_db); }

private:
    sqlite3* m_db = nullptr;
};

class Transaction {
public:
    explicit Transaction(Database& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    Expected<void> commit();

private:
    Database& m_db;
    bool m_done = false;
};

Error databaseError(sqlite3* db, std::string_view what);

} // namespace goblin::labnode
