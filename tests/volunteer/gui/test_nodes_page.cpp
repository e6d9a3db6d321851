// The lab nodes page's CA file for wss:// nodes: the field reports an edit once (only a change),
// the settings keep it, and the bridge refuses a wss:// node whose CA file cannot be read (saying
// which file) while a ws:// node never needs one.
#include <QtTest>

#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "engine_bridge.hpp"
#include "nodes_page.hpp"
#include "settings_store.hpp"

using namespace goblin::volunteer;

class TestNodesPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void caFileFieldReportsOnlyAChange();
    void caFileIsSavedAndLoaded();
    void bridgeRefusesAnUnreadableCaFileForWss();
};

void TestNodesPage::caFileFieldReportsOnlyAChange() {
    NodesPage page;
    page.setCaFile(QStringLiteral("/etc/lab/ca.pem"));
    auto* field = page.findChild<QLineEdit*>(QStringLiteral("caFile"));
    QVERIFY(field);
    QCOMPARE(field->text(), QStringLiteral("/etc/lab/ca.pem"));
    QSignalSpy changed(&page, &NodesPage::caFileChanged);
    Q_EMIT field->editingFinished();
    QCOMPARE(changed.count(), 0);
    field->setText(QStringLiteral("  /home/me/lab-ca.pem "));
    Q_EMIT field->editingFinished();
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.at(0).at(0).toString(), QStringLiteral("/home/me/lab-ca.pem"));
    Q_EMIT field->editingFinished();
    QCOMPARE(changed.count(), 1);
}

void TestNodesPage::caFileIsSavedAndLoaded() {
    QTemporaryDir dir;
    QSettings store(dir.filePath(QStringLiteral("app.ini")), QSettings::IniFormat);
    VolunteerSettings settings;
    settings.caFile = QStringLiteral("/etc/lab/ca.pem");
    saveSettings(store, settings);
    QCOMPARE(loadSettings(store).settings.caFile, QStringLiteral("/etc/lab/ca.pem"));
}

void TestNodesPage::bridgeRefusesAnUnreadableCaFileForWss() {
    QTemporaryDir dir;
    const QString missing = dir.filePath(QStringLiteral("no-such-ca.pem"));
    EngineBridge bridge;
    QSignalSpy errors(&bridge, &EngineBridge::linkError);
    BridgeConfig config;
    config.configDir = dir.path();
    config.caFile = missing;
    config.nodes.push_back(BridgeNode{QStringLiteral("wss://127.0.0.1:1"), 100});
    bridge.start(config);
    QCOMPARE(errors.count(), 1);
    QVERIFY2(errors.at(0).at(0).toString().contains(missing),
             qPrintable(errors.at(0).at(0).toString()));
    QVERIFY(!bridge.running());
}

QTEST_MAIN(TestNodesPage)
#include "test_nodes_page.moc"
