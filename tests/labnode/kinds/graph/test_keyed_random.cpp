// Tests of the worker's keyed random stream: the same key gives the same stream, another key
// another, and a stream does not repeat itself.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "goblin/core/random_source.hpp"
#include "kinds/graph/keyed_random.hpp"

namespace lab = goblin::labnode;

class TestKeyedRandom : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keyedRandomIsAStreamPerKey();
};

void TestKeyedRandom::keyedRandomIsAStreamPerKey() {
    goblin::core::SeededRandom seeds(11);
    const lab::KeyedRandom::Key key = lab::KeyedRandom::drawKey(seeds);
    const lab::KeyedRandom::Key other = lab::KeyedRandom::drawKey(seeds);
    lab::KeyedRandom a(key), b(key), c(other);
    std::vector<std::uint64_t> fromA, fromB, fromC;
    for (int i = 0; i < 1000; ++i) {
        fromA.push_back(a.next64());
        fromB.push_back(b.next64());
        fromC.push_back(c.next64());
    }
    QCOMPARE(fromA, fromB);
    QVERIFY(fromA != fromC);
    std::sort(fromA.begin(), fromA.end());
    QVERIFY(std::adjacent_find(fromA.begin(), fromA.end()) == fromA.end());
}

QTEST_APPLESS_MAIN(TestKeyedRandom)
#include "test_keyed_random.moc"
