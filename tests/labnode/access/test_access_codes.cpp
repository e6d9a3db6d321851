// Tests of the access pages' sign-in codes on a real SQLite file with an injected clock and a
// seeded random source: codes are single use, expire, die after wrong tries, are bound to their
// e-mail address, stored only as hashes, and rate-limited per e-mail and per network address.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <set>
#include <string>

#include "access/sign_in_codes.hpp"
#include "store/node_store.hpp"

using goblin::ErrorCode;
using goblin::core::SeededRandom;
using goblin::labnode::NodeStore;
using goblin::labnode::access::CodeSettings;
using goblin::labnode::access::SignInCodes;

namespace {

struct Fixture {
    QTemporaryDir dir;
    NodeStore store{dir.filePath("node.db").toStdString()};
    double now = 1'000'000.0;
    SeededRandom random{42};
    SignInCodes codes{store.database(), [this] { return now; }, random, CodeSettings{}};
};

// Built with append: GCC 12 -O3 warns falsely on "literal" + std::string.
std::string numbered(const char* prefix, int i, const char* suffix) {
    std::string text = prefix;
    return text.append(std::to_string(i)).append(suffix);
}

} // namespace

class TestAccessCodes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aCodeSignsInOnceAndIsStoredHashed() {
        Fixture f;
        auto code = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(code.has_value());
        QCOMPARE(code->size(), std::size_t{8});
        QVERIFY(
            std::all_of(code->begin(), code->end(), [](char c) { return c >= '0' && c <= '9'; }));
        // The plain code is nowhere in the database.
        auto rows = f.store.database().prepare("SELECT count(*) FROM access_codes WHERE "
                                               "instr(code_hash, ?) > 0 OR code_hash = ?");
        rows.bind(1, *code).bind(2, *code);
        QVERIFY(rows.step().value_or(false));
        QCOMPARE(rows.columnInt(0), std::int64_t{0});

        QVERIFY(f.codes.redeem("ada@lab.example", *code).has_value());
        auto replay = f.codes.redeem("ada@lab.example", *code);
        QVERIFY(!replay.has_value());
        QCOMPARE(replay.error().code, ErrorCode::Unauthenticated);
        QVERIFY(replay.error().message.find("already used") != std::string::npos);
    }

    void typedWithSpacesOrADashStillWorks() {
        Fixture f;
        auto code = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(code.has_value());
        std::string typed = " ";
        typed.append(code->substr(0, 4)).append("-").append(code->substr(4)).append(" ");
        QVERIFY(f.codes.redeem("ada@lab.example", typed).has_value());
    }

    void aCodeExpires() {
        Fixture f;
        auto code = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(code.has_value());
        f.now += CodeSettings{}.lifetimeSeconds;
        auto late = f.codes.redeem("ada@lab.example", *code);
        QVERIFY(!late.has_value());
        QVERIFY(late.error().message.find("expired") != std::string::npos);
    }

    void justBeforeExpiryItWorks() {
        Fixture f;
        auto code = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(code.has_value());
        f.now += CodeSettings{}.lifetimeSeconds - 1.0;
        QVERIFY(f.codes.redeem("ada@lab.example", *code).has_value());
    }

    void aCodeIsBoundToItsEmail() {
        Fixture f;
        auto code = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(code.has_value());
        auto other = f.codes.redeem("eve@lab.example", *code);
        QVERIFY(!other.has_value());
        QVERIFY(other.error().message.find("wrong code") != std::string::npos);
        QVERIFY(f.codes.redeem("ada@lab.example", *code).has_value());
    }

    void wrongCodesAreRefusedAndTooManyKillTheLiveOnes() {
        Fixture f;
        auto code = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(code.has_value());
        const std::string wrong = *code == "00000000" ? "00000001" : "00000000";
        for (int i = 0; i < CodeSettings{}.maxFailures; ++i) {
            auto guess = f.codes.redeem("ada@lab.example", wrong);
            QVERIFY(!guess.has_value());
            QVERIFY(guess.error().message.find("wrong code") != std::string::npos);
        }
        QVERIFY(!f.codes.redeem("ada@lab.example", "not a code").has_value());
        auto right = f.codes.redeem("ada@lab.example", *code);
        QVERIFY(!right.has_value());
        QVERIFY(right.error().message.find("too many wrong") != std::string::npos);
        // A new code works again.
        auto fresh = f.codes.issue("ada@lab.example", "10.0.0.1");
        QVERIFY(fresh.has_value());
        QVERIFY(f.codes.redeem("ada@lab.example", *fresh).has_value());
    }

    void issuesAreRateLimitedPerEmailForAnHour() {
        Fixture f;
        const CodeSettings settings;
        for (int i = 0; i < settings.perEmailPerHour; ++i) {
            f.now += 1.0;
            // From different addresses: the e-mail's own limit is what stops it.
            QVERIFY(f.codes.issue("ada@lab.example", numbered("10.0.0.", i, "")).has_value());
        }
        auto limited = f.codes.issue("ada@lab.example", "10.0.1.1");
        QVERIFY(!limited.has_value());
        QCOMPARE(limited.error().code, ErrorCode::LimitExceeded);
        QVERIFY(f.codes.issue("bob@lab.example", "10.0.1.1").has_value());
        f.now += 3600.0;
        QVERIFY(f.codes.issue("ada@lab.example", "10.0.1.1").has_value());
    }

    void issuesAreRateLimitedPerAddress() {
        Fixture f;
        const CodeSettings settings;
        for (int i = 0; i < settings.perAddressPerHour; ++i)
            QVERIFY(f.codes.issue(numbered("r", i, "@lab.example"), "10.0.0.9").has_value());
        auto limited = f.codes.issue("late@lab.example", "10.0.0.9");
        QVERIFY(!limited.has_value());
        QCOMPARE(limited.error().code, ErrorCode::LimitExceeded);
        QVERIFY(limited.error().message.find("network address") != std::string::npos);
        QVERIFY(f.codes.issue("late@lab.example", "10.0.0.10").has_value());
    }

    void codesDifferAndAreNotPredictableFromEachOther() {
        Fixture f;
        std::set<std::string> seen;
        for (int i = 0; i < 20; ++i) {
            auto code = f.codes.issue(numbered("r", i, "@lab.example"), "10.0.0.1");
            QVERIFY(code.has_value());
            seen.insert(*code);
        }
        QCOMPARE(seen.size(), std::size_t{20});
    }
};

QTEST_APPLESS_MAIN(TestAccessCodes)
#include "test_access_codes.moc"
