#include "store/database.hpp"

#include <stdexcept>

namespace goblin::labnode {

Error databaseError(sqlite3* db, std::string_view what) {
    return Error{ErrorCode::Internal,
                 "database: " + std::string(what) + ": " + std::string(sqlite3_errmsg(db))};
}

Statement::Statement(sqlite3* db, std::string_view sql) : m_db(db) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &m_statement, nullptr) !=
        SQLITE_OK)
        throw std::runtime_error(databaseError(db, "prepare " + std::string(sql)).message);
}

Statement::~Statement() {
    sqlite3_finalize(m_statement);
}

Statement& Statement::bind(int index, std::int64_t value) {
    sqlite3_bind_int64(m_statement, index, value);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    sqlite3_bind_double(m_statement, index, value);
    return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
    sqlite3_bind_text(m_statement, index, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bindNull(int index) {
    sqlite3_bind_null(m_statement, index);
    return *this;
}

Expected<bool> Statement::step() {
    const int rc = sqlite3_step(m_statement);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    return tl::unexpected(databaseError(m_db, "step"));
}

Expected<void> Statement::run() {
    for (;;) {
        auto row = step();
        if (!row)
            return tl::unexpected(row.error());
        if (!*row)
            break;
    }
    reset();
    return {};
}

void Statement::reset() {
    sqlite3_reset(m_statement);
    sqlite3_clear_bindings(m_statement);
}

std::int64_t Statement::columnInt(int index) const {
    return sqlite3_column_int64(m_statement, index);
}
double Statement::columnDouble(int index) const {
    return sqlite3_column_double(m_statement, index);
}
bool Statement::columnIsNull(int index) const {
    return sqlite3_column_type(m_statement, index) == SQLITE_NULL;
}
std::string Statement::columnText(int index) const {
    const auto* text = sqlite3_column_text(m_statement, index);
    return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
}

Database::Database(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &m_db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
        std::string message = "cannot open database " + path + ": " + sqlite3_errmsg(m_db);
        sqlite3_close(m_db);
        throw std::runtime_error(message);
    }
    sqlite3_busy_timeout(m_db, 5000);
    for (const char* pragma :
         {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"}) {
        if (auto ok = execute(pragma); !ok)
            throw std::runtime_error(ok.error().message);
    }
}

Database::~Database() {
    m_statements.clear(); // finalize before closing
    sqlite3_close(m_db);
}

ScopedStatement Database::prepare(std::string_view sql) {
    auto it = m_statements.find(std::string(sql));
    if (it == m_statements.end())
        it = m_statements.emplace(std::string(sql), std::make_unique<Statement>(m_db, sql)).first;
    it->second->reset();
    return ScopedStatement(*it->second);
}

Expected<void> Database::execute(std::string_view sql) {
    char* message = nullptr;
    if (sqlite3_exec(m_db, std::string(sql).c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        Error error{ErrorCode::Internal,
                    "database: " + std::string(message ? message : "unknown error")};
        sqlite3_free(message);
        return tl::unexpected(error);
    }
    return {};
}

Expected<Transaction> Transaction::begin(Database& db) {
    if (auto ok = db.execute("BEGIN IMMEDIATE"); !ok)
        return tl::unexpected(ok.error());
    return Transaction(db);
}

Transaction::~Transaction() {
    if (!m_done)
        (void)m_db.execute("ROLLBACK");
}

Expected<void> Transaction::commit() {
    const double startedAt = m_db.commitClock();
    auto ok = m_db.execute("COMMIT");
    m_done = ok.has_value();
    if (m_done)
        m_db.noteCommit(startedAt);
    return ok;
}

std::string Database::filename() const {
    const char* name = sqlite3_db_filename(m_db, "main");
    return name ? std::string(name) : std::string();
}

void Database::observeCommits(std::function<double()> steadySeconds,
                              std::function<void(double)> observer) {
    m_commitClock = std::move(steadySeconds);
    m_commitObserver = std::move(observer);
}

void Database::noteCommit(double startedAt) {
    if (m_commitClock && m_commitObserver)
        m_commitObserver(m_commitClock() - startedAt);
}

} // namespace goblin::labnode
