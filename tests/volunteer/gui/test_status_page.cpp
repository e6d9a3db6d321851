// The status page: its table fits the default window however long the lab nodes' addresses and
// activities are (the address and activity columns elide), and its totals come from the kept
// tallies, so after a restart "in all", accepted / rejected and the compute time agree.
#include <QtTest>

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>

#include "daily_tally.hpp"
#include "main_window.hpp"
#include "status_page.hpp"

using namespace goblin::volunteer;

class TestStatusPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void tableFitsTheDefaultWindow();
    void totalsAgreeAfterARestart();
};

namespace {

NodeStatus longNode(int index) {
    NodeStatus node;
    node.url = QStringLiteral("wss://gpu-goblin-lab-node-%1.physics.example-university.edu:8765")
                   .arg(index);
    node.sharePercent = 50;
    node.engine.link = LinkState::Released;
    node.engine.backend = "opencl-clblast";
    node.engine.counters.computed = 123456;
    node.engine.counters.accepted = 123000;
    node.engine.counters.rejected = 456;
    node.engine.counters.computeSeconds = 7 * 3600 + 59 * 60;
    return node;
}

} // namespace

void TestStatusPage::tableFitsTheDefaultWindow() {
    MainWindow window(8);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QSize size = window.size();
    StatusView view;
    view.nodes = {longNode(1), longNode(2)};
    window.statusPage()->display(view);
    QCoreApplication::processEvents();
    auto* table = window.statusPage()->findChild<QTableWidget*>(QStringLiteral("devices"));
    QVERIFY(table);
    QCOMPARE(window.size(), size); // the window did not grow to hold the table
    QVERIFY2(table->horizontalHeader()->length() <= table->viewport()->width(),
             qPrintable(QStringLiteral("columns %1 px in a %2 px table")
                            .arg(table->horizontalHeader()->length())
                            .arg(table->viewport()->width())));
    QVERIFY(table->columnWidth(0) >= 100); // the address keeps room to be recognised
    QCOMPARE(table->item(0, 0)->toolTip(), view.nodes[0].url); // the whole address on hover
    // Short addresses and activities are shown whole, the address taking the spare width.
    StatusView small;
    small.nodes = {longNode(1)};
    small.nodes[0].url = QStringLiteral("ws://127.0.0.1:41985");
    small.nodes[0].engine.link = LinkState::Connected;
    window.statusPage()->display(small);
    QCoreApplication::processEvents();
    const QString shown = table->item(0, 0)->text();
    QVERIFY(table->columnWidth(0) > table->fontMetrics().horizontalAdvance(shown));
    QCOMPARE(table->horizontalHeader()->length(), table->viewport()->width());
}

void TestStatusPage::totalsAgreeAfterARestart() {
    QTemporaryDir dir;
    QSettings store(dir.filePath(QStringLiteral("settings.conf")), QSettings::IniFormat);
    EngineCounters run;
    run.computed = 5;
    run.accepted = 4;
    run.rejected = 1;
    run.computeSeconds = 10;
    {
        DailyTally first(store);
        QVERIFY(first.count(run));
        QVERIFY(!first.count(run)); // the same counters again add nothing
    }
    DailyTally again(store); // the app restarted: its engines count from zero
    EngineCounters second;
    second.computed = 2;
    second.accepted = 2;
    second.computeSeconds = 2.5;
    QVERIFY(again.count(second));
    const TallyTotals totals = again.totals();
    QCOMPARE(totals.tasksTotal, std::int64_t{7});
    QCOMPARE(totals.tasksToday, std::int64_t{7});
    QCOMPARE(totals.acceptedTotal, std::int64_t{6});
    QCOMPARE(totals.rejectedTotal, std::int64_t{1});
    QCOMPARE(totals.computeSecondsTotal, 12.5);
    StatusPage page;
    StatusView view;
    view.totals = totals;
    view.engine.counters = second; // this run's counters no longer feed the totals
    page.display(view);
    QCOMPARE(page.findChild<QLabel*>(QStringLiteral("totals"))->text(),
             QStringLiteral("Tasks today 7, in all 7 · accepted 6 / rejected 1 · compute time "
                            "lent 12.5 s"));
}

QTEST_MAIN(TestStatusPage)
#include "test_status_page.moc"
