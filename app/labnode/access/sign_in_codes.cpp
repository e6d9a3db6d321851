#include "access/sign_in_codes.hpp"

#include <algorithm>
#include <cctype>

#include "node/secrets.hpp"

namespace goblin::labnode::access {
namespace {

constexpr int kCodeDigits = 8;
constexpr std::uint64_t kCodeRange = 100'000'000; // 10^kCodeDigits

std::int64_t countSince(Database& db, const char* sql, const std::string& key, double since) {
    auto query = db.prepare(sql);
    query.bind(1, key).bind(2, since);
    return query.step().value_or(false) ? query.columnInt(0) : 0;
}

// People copy codes with spaces or a dash in the middle.
std::string digitsOf(const std::string& typed) {
    std::string digits;
    for (const char c : typed)
        if (c != ' ' && c != '-')
            digits.push_back(c);
    return digits;
}

} // namespace

std::string codeHash(const std::string& email, const std::string& code) {
    std::string bound = email;
    bound.append(":").append(code);
    return hashSecret(bound);
}

SignInCodes::SignInCodes(Database& db, Clock clock, core::RandomSource& random,
                         CodeSettings settings)
    : m_db(db), m_clock(std::move(clock)), m_random(random), m_settings(settings) {}

std::string SignInCodes::newCode() {
    // Rejection sampling: every code equally likely.
    constexpr std::uint64_t kLimit = UINT64_MAX - UINT64_MAX % kCodeRange;
    std::uint64_t bits = m_random.next64();
    while (bits >= kLimit)
        bits = m_random.next64();
    std::string code = std::to_string(bits % kCodeRange);
    code.insert(0, static_cast<std::size_t>(kCodeDigits) - code.size(), '0');
    return code;
}

Expected<std::string> SignInCodes::issue(const std::string& email, const std::string& address) {
    const double now = m_clock();
    const double hourAgo = now - 3600.0;
    if (countSince(m_db, "SELECT count(*) FROM access_codes WHERE email = ? AND issued_at > ?",
                   email, hourAgo) >= m_settings.perEmailPerHour)
        return makeError(ErrorCode::LimitExceeded,
                         "too many codes were sent to this address in the last hour; try later");
    if (countSince(m_db, "SELECT count(*) FROM access_codes WHERE address = ? AND issued_at > ?",
                   address, hourAgo) >= m_settings.perAddressPerHour)
        return makeError(ErrorCode::LimitExceeded,
                         "too many codes were asked from your network address in the last hour; "
                         "try later");
    // Codes a day old count for nothing any more: they go as new ones come.
    (void)m_db.prepare("DELETE FROM access_codes WHERE issued_at < ?").bind(1, now - 86400.0).run();
    const std::string code = newCode();
    auto insert = m_db.prepare("INSERT INTO access_codes(email, address, code_hash, issued_at, "
                               "expires_at) VALUES(?, ?, ?, ?, ?)");
    insert.bind(1, email).bind(2, address).bind(3, codeHash(email, code)).bind(4, now);
    if (auto ok = insert.bind(5, now + m_settings.lifetimeSeconds).run(); !ok)
        return tl::unexpected(ok.error());
    return code;
}

Expected<void> SignInCodes::redeem(const std::string& email, const std::string& typed) {
    const double now = m_clock();
    const std::string code = digitsOf(typed);
    const bool wellFormed = code.size() == static_cast<std::size_t>(kCodeDigits) &&
                            std::all_of(code.begin(), code.end(), [](char c) {
                                return std::isdigit(static_cast<unsigned char>(c));
                            });
    if (wellFormed) {
        auto match = m_db.prepare("SELECT id, expires_at, used_at, failures FROM access_codes "
                                  "WHERE email = ? AND code_hash = ? ORDER BY id DESC LIMIT 1");
        match.bind(1, email).bind(2, codeHash(email, code));
        if (match.step().value_or(false)) {
            const std::int64_t id = match.columnInt(0);
            if (!match.columnIsNull(2))
                return makeError(ErrorCode::Unauthenticated,
                                 "this code was already used; ask for a new one");
            if (now >= match.columnDouble(1))
                return makeError(ErrorCode::Unauthenticated,
                                 "this code has expired; ask for a new one");
            if (match.columnInt(3) >= m_settings.maxFailures)
                return makeError(ErrorCode::Unauthenticated,
                                 "too many wrong codes were tried; ask for a new one");
            auto use = m_db.prepare(
                "UPDATE access_codes SET used_at = ? WHERE id = ? AND used_at IS NULL");
            if (auto ok = use.bind(1, now).bind(2, id).run(); !ok)
                return tl::unexpected(ok.error());
            if (m_db.changes() != 1)
                return makeError(ErrorCode::Unauthenticated,
                                 "this code was already used; ask for a new one");
            return {};
        }
    }
    // A wrong guess counts against every live code of this e-mail, so guessing is bounded.
    auto fail = m_db.prepare("UPDATE access_codes SET failures = failures + 1 WHERE email = ? AND "
                             "used_at IS NULL AND expires_at > ?");
    (void)fail.bind(1, email).bind(2, now).run();
    return makeError(ErrorCode::Unauthenticated, "wrong code; check the mail we sent you");
}

} // namespace goblin::labnode::access
