// Tests of the random sources: the CSPRNG fills every byte and never repeats itself, the seeded
// one is repeatable, chance() honours its edges and its rate.
#include <QtTest/QtTest>

#include <array>
#include <cstdint>
#include <set>

#include "goblin/core/random_source.hpp"

using goblin::core::SecureRandom;
using goblin::core::SeededRandom;

class TestRandomSource : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void secureRandomDoesNotRepeat() {
        SecureRandom random;
        std::set<std::uint64_t> seen;
        for (int i = 0; i < 1000; ++i)
            seen.insert(random.next64());
        QCOMPARE(seen.size(), std::size_t{1000});
    }

    void secureRandomFillsOddLengths() {
        SecureRandom random;
        // 13 bytes: every byte is written (the chance that one stays 0xAA in all 64 draws is nil).
        std::array<int, 13> changed{};
        for (int round = 0; round < 64; ++round) {
            std::array<std::byte, 13> bytes;
            bytes.fill(std::byte{0xAA});
            random.fill(bytes);
            for (std::size_t i = 0; i < bytes.size(); ++i)
                changed[i] += bytes[i] != std::byte{0xAA} ? 1 : 0;
        }
        for (int count : changed)
            QVERIFY(count > 0);
    }

    void seededRandomRepeats() {
        SeededRandom first(42), second(42), other(43);
        for (int i = 0; i < 100; ++i) {
            const std::uint64_t value = first.next64();
            QCOMPARE(second.next64(), value);
            QVERIFY(other.next64() != value);
        }
    }

    void uniformStaysInRange() {
        SeededRandom random(7);
        double sum = 0;
        for (int i = 0; i < 20000; ++i) {
            const double value = random.uniform01();
            QVERIFY(value >= 0.0 && value < 1.0);
            sum += value;
        }
        QVERIFY(std::abs(sum / 20000 - 0.5) < 0.02);
    }

    void chanceHonoursEdgesAndRate() {
        SecureRandom random;
        int hits = 0;
        for (int i = 0; i < 20000; ++i) {
            QVERIFY(!random.chance(0.0));
            QVERIFY(random.chance(1.0));
            hits += random.chance(0.25) ? 1 : 0;
        }
        // 20000 draws at 0.25: the mean is 5000 with a standard deviation of about 61.
        QVERIFY(hits > 4500 && hits < 5500);
    }
};

QTEST_APPLESS_MAIN(TestRandomSource)
#include "test_random_source.moc"
