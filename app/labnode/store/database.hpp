// Thin RAII over SQLite: a connection, prepared statements, and a transaction that rolls back in
// its destructor unless committed. Owned by the node's store thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <sqlite3.h>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

class Statement {
public:
    Statement(sqlite3* db,
              std::string_view sql); // throws std::runtime_error on a bad statement (a bug)
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

// A cached statement in use: resets it (ending any read or RETURNING in progress) when it goes out
// of scope, so no statement stays active across a COMMIT.
class ScopedStatement {
public:
    explicit ScopedStatement(Statement& statement) : m_statement(statement) {}
    ~ScopedStatement() { m_statement.reset(); }
    ScopedStatement(const ScopedStatement&) = delete;
    ScopedStatement& operator=(const ScopedStatement&) = delete;

    template <class T> ScopedStatement& bind(int index, T value) {
        m_statement.bind(index, value);
        return *this;
    }
    Expected<bool> step() { return m_statement.step(); }
    Expected<void> run() { return m_statement.run(); }
    std::int64_t columnInt(int index) const { return m_statement.columnInt(index); }
    double columnDouble(int index) const { return m_statement.columnDouble(index); }
    std::string columnText(int index) const { return m_statement.columnText(index); }
    bool columnIsNull(int index) const { return m_statement.columnIsNull(index); }

private:
    Statement& m_statement;
};

class Database {
public:
    // Opens (creating) the file with WAL and synchronous=NORMAL; throws on failure (startup error).
    explicit Database(const std::string& path);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    Expected<void> execute(std::string_view sql);
    // A statement prepared once and kept: reset and with no bindings each time it is handed out.
    ScopedStatement prepare(std::string_view sql);
    std::int64_t changes() const { return sqlite3_changes(m_db); }
    // The database file's absolute path; empty for an in-memory database.
    std::string filename() const;

    // Every COMMIT is timed with `steadySeconds` (a monotonic clock, injected) and the seconds it
    // took go to `observer` (the node's commit-latency histogram).
    void observeCommits(std::function<double()> steadySeconds,
                        std::function<void(double)> observer);

private:
    friend class Transaction;
    void noteCommit(double startedAt);
    double commitClock() const { return m_commitClock ? m_commitClock() : 0.0; }

    sqlite3* m_db = nullptr;
    std::function<double()> m_commitClock;
    std::function<void(double)> m_commitObserver;
    std::unordered_map<std::string, std::unique_ptr<Statement>> m_statements;
};

// BEGIN IMMEDIATE … COMMIT; rolls back in its destructor unless committed. A failing BEGIN is an
// error the caller handles (a busy or broken database), never an exception.
class Transaction {
public:
    [[nodiscard]] static Expected<Transaction> begin(Database& db);
    ~Transaction();
    Transaction(Transaction&& other) noexcept : m_db(other.m_db), m_done(other.m_done) {
        other.m_done = true;
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    Transaction& operator=(Transaction&&) = delete;
    [[nodiscard]] Expected<void> commit();

private:
    explicit Transaction(Database& db) : m_db(db) {}
    Database& m_db;
    bool m_done = false;
};

Error databaseError(sqlite3* db, std::string_view what);

} // namespace goblin::labnode
