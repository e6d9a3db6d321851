// The engine bridge against a real `goblin-labnode serve --tls-cert/--tls-key` on loopback, with a
// CA and certificates made by the test: with the lab's CA file the engine connects over wss://;
// with another CA it never connects and its status says the certificate failed verification.
#include <QtTest>

#include <filesystem>

#include "engine_bridge.hpp"
#include "lab_node_fixture.hpp"
#include "net/test_pki.hpp"

using namespace goblin::volunteer;

class TestEngineBridgeTls : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void connectsWithTheLabCa();
    void wrongCaIsShownAndNeverConnects();

private:
    BridgeConfig config(const QString& caFile, const QString& name) const;

    goblin::testing::LabNodeFixture m_node;
    QString m_pki;
};

void TestEngineBridgeTls::initTestCase() {
    m_pki = m_node.path(QStringLiteral("pki"));
    std::filesystem::create_directories(m_pki.toStdString());
    const auto ca = goblin::test::makeCertificate("Goblin Test CA", nullptr);
    const auto other = goblin::test::makeCertificate("Someone Else's CA", nullptr);
    const auto server =
        goblin::test::makeCertificate("localhost", &ca, "DNS:localhost,IP:127.0.0.1");
    goblin::test::writePem(ca, m_pki.toStdString(), "ca");
    goblin::test::writePem(other, m_pki.toStdString(), "other-ca");
    goblin::test::writePem(server, m_pki.toStdString(), "server");
    m_node.useTls(m_pki + QStringLiteral("/server.crt"), m_pki + QStringLiteral("/server.key"));
    if (const QString why = m_node.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
    QVERIFY(m_node.url().startsWith(QStringLiteral("wss://127.0.0.1:")));
}

BridgeConfig TestEngineBridgeTls::config(const QString& caFile, const QString& name) const {
    BridgeConfig config;
    config.nodes = {BridgeNode{m_node.url(), 100}};
    config.configDir = m_node.path(name);
    config.slots = 1;
    config.memoryBytes = 256 << 20;
    config.caFile = caFile;
    return config;
}

void TestEngineBridgeTls::connectsWithTheLabCa() {
    EngineBridge bridge;
    bridge.setPollInterval(50);
    EngineStatus status;
    connect(&bridge, &EngineBridge::statusChanged, this,
            [&](const EngineStatus& next) { status = next; });
    QSignalSpy errors(&bridge, &EngineBridge::linkError);
    bridge.setPlan(ComputePlan{true, false, 1, 100});
    bridge.start(config(m_pki + QStringLiteral("/ca.crt"), QStringLiteral("trusting")));
    QTRY_COMPARE_WITH_TIMEOUT(status.link, LinkState::Connected, 20000);
    QVERIFY(!status.volunteerId.empty());
    QCOMPARE(errors.count(), 0);
    bridge.stop();
}

void TestEngineBridgeTls::wrongCaIsShownAndNeverConnects() {
    EngineBridge bridge;
    bridge.setPollInterval(50);
    EngineStatus status;
    bool everConnected = false;
    connect(&bridge, &EngineBridge::statusChanged, this, [&](const EngineStatus& next) {
        status = next;
        everConnected = everConnected || next.link == LinkState::Connected;
    });
    bridge.setPlan(ComputePlan{true, false, 1, 100});
    bridge.start(config(m_pki + QStringLiteral("/other-ca.crt"), QStringLiteral("misled")));
    QTRY_VERIFY_WITH_TIMEOUT(
        status.lastError.find("certificate verify failed") != std::string::npos, 20000);
    QVERIFY(!everConnected);
    bridge.stop();
}

QTEST_MAIN(TestEngineBridgeTls)
#include "test_engine_bridge_tls.moc"
