// Tests of SecondOpinionWatch, the clock of tasks that starve for a second volunteer's opinion:
// a task is due once it starved the whole wait without a break, each due task is returned once,
// and a task that found a volunteer meanwhile starts from nothing when it starves again.
#include <QtTest/QtTest>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kinds/graph/second_opinion_watch.hpp"

using goblin::labnode::SecondOpinionWatch;

namespace {

using Ids = std::vector<std::int64_t>;
using Starving = std::map<std::int64_t, std::string>;

} // namespace

class TestSecondOpinionWatch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aTaskIsDueOnceItStarvedTheWholeWait();
    void aTaskThatFoundAVolunteerStartsAgain();
    void aZeroWaitDecidesAtTheFirstLook();
};

void TestSecondOpinionWatch::aTaskIsDueOnceItStarvedTheWholeWait() {
    SecondOpinionWatch watch(60.0);
    const Starving both{{1, "every connected volunteer computed it already"},
                        {2, "the other connected volunteers lend too little memory for it"}};
    QCOMPARE(watch.update(both, 100.0), Ids{});
    QCOMPARE(watch.starving(1)->since, 100.0);
    QCOMPARE(watch.starving(2)->why,
             std::string("the other connected volunteers lend too little memory for it"));
    QCOMPARE(watch.update({{1, "every connected volunteer computed it already"}}, 130.0), Ids{});
    QVERIFY(!watch.starving(2).has_value()); // it found a volunteer
    QCOMPARE(watch.update({{1, "every connected volunteer computed it already"}}, 159.5), Ids{});
    QCOMPARE(watch.update({{1, "every connected volunteer computed it already"}}, 160.0), Ids{1});
    // Returned once: the node decides it now.
    QVERIFY(!watch.starving(1).has_value());
    QCOMPARE(watch.update({}, 170.0), Ids{});
}

void TestSecondOpinionWatch::aTaskThatFoundAVolunteerStartsAgain() {
    SecondOpinionWatch watch(10.0);
    QCOMPARE(watch.update({{7, "why"}}, 0.0), Ids{});
    QCOMPARE(watch.update({}, 5.0), Ids{});
    QCOMPARE(watch.update({{7, "why"}}, 9.0), Ids{});
    QCOMPARE(watch.starving(7)->since, 9.0);
    QCOMPARE(watch.update({{7, "why"}}, 18.0), Ids{});
    QCOMPARE(watch.update({{7, "why"}}, 19.0), Ids{7});
}

void TestSecondOpinionWatch::aZeroWaitDecidesAtTheFirstLook() {
    SecondOpinionWatch watch(0.0);
    QCOMPARE(watch.update({{3, "why"}, {4, "why"}}, 42.0), (Ids{3, 4}));
    QCOMPARE(watch.waitSeconds(), 0.0);
}

QTEST_APPLESS_MAIN(TestSecondOpinionWatch)
#include "test_second_opinion_watch.moc"
