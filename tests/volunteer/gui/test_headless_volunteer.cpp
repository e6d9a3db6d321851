// The headless goblin-volunteer against a real lab node: banned by lab staff while it runs, it
// exits by itself with a nonzero code and says why (and again at once when it comes back with the
// banned identity); stopped by a signal, it sends a WebSocket close frame, so the node logs a
// normal close (code 1000) rather than a dropped connection. Also the desktop app's quit sends one.
#include <QtTest>

#include <QDir>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>

#include <csignal>

#include "device_listing.hpp"
#include "goblin/compute/opencl_devices.hpp"
#include "lab_node_fixture.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

class TestHeadlessVolunteer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void bannedVolunteerExitsSayingWhy();
    void signalSendsACloseFrame();
    void desktopQuitSendsACloseFrame();
    void childListsTheSameDevices();
    void desktopBinaryQuitsOnSigterm();

private:
    goblin::testing::LabNodeFixture m_node;
};

namespace {

const QRegularExpression kRegistered(QStringLiteral(R"(registered with the lab node as (v-\S+) )"));

void startVolunteer(QProcess& volunteer, const QString& url, const QString& configDir) {
    volunteer.start(QStringLiteral(GOBLIN_VOLUNTEER),
                    {QStringLiteral("--headless"), QStringLiteral("--node"), url,
                     QStringLiteral("--config-dir"), configDir, QStringLiteral("--threads"),
                     QStringLiteral("1")});
}

// The volunteer's id, from its "registered … as v-…" line.
QString waitForId(QProcess& volunteer) {
    QString seen;
    QDeadlineTimer deadline(30000);
    while (!deadline.hasExpired()) {
        volunteer.waitForReadyRead(100);
        seen += QString::fromUtf8(volunteer.readAllStandardOutput());
        if (auto match = kRegistered.match(seen); match.hasMatch())
            return match.captured(1);
    }
    return {};
}

} // namespace

void TestHeadlessVolunteer::initTestCase() {
    if (const QString why = m_node.start(); !why.isEmpty())
        QSKIP(qPrintable(why));
}

void TestHeadlessVolunteer::bannedVolunteerExitsSayingWhy() {
    QProcess volunteer;
    startVolunteer(volunteer, m_node.url(), m_node.path(QStringLiteral("banned")));
    const QString id = waitForId(volunteer);
    QVERIFY2(!id.isEmpty(), volunteer.readAllStandardError().constData());
    QProcess ban;
    ban.start(goblin::testing::LabNodeFixture::labnode(),
              {QStringLiteral("volunteers"), QStringLiteral("ban"), id, QStringLiteral("--reason"),
               QStringLiteral("returns garbage"), QStringLiteral("--db"), m_node.db()});
    QVERIFY(ban.waitForFinished(30000));
    QVERIFY2(ban.exitCode() == 0, ban.readAllStandardError().constData());
    // The node's two-second staff check finds the ban (reading the node's output on the way, so
    // that its pipe never fills), then the volunteer leaves by itself.
    const QRegularExpression bannedLine(QRegularExpression::escape(id) +
                                        QStringLiteral(" BANNED by lab staff"));
    QVERIFY2(m_node.waitForLine(bannedLine, 60000).hasMatch(), qPrintable(m_node.output()));
    if (!volunteer.waitForFinished(60000))
        QFAIL(qPrintable(QStringLiteral("the banned volunteer kept running:\n") +
                         QString::fromUtf8(volunteer.readAllStandardOutput()) +
                         QString::fromUtf8(volunteer.readAllStandardError()) +
                         QStringLiteral("\nthe node:\n") + m_node.output()));
    QCOMPARE(volunteer.exitStatus(), QProcess::NormalExit);
    QCOMPARE(volunteer.exitCode(), 3);
    const QString error = QString::fromUtf8(volunteer.readAllStandardError());
    QVERIFY2(error.contains(QLatin1String("goblin-volunteer: the lab node refused this volunteer: "
                                          "banned: ")) &&
                 error.contains(QLatin1String("returns garbage")) &&
                 error.contains(QLatin1String("exiting")),
             qPrintable(error));

    QProcess again; // the same identity: refused at hello, and it exits again
    startVolunteer(again, m_node.url(), m_node.path(QStringLiteral("banned")));
    QVERIFY2(again.waitForFinished(30000), "the banned identity kept running");
    QCOMPARE(again.exitCode(), 3);
    QVERIFY(QString::fromUtf8(again.readAllStandardError())
                .contains(QLatin1String("this volunteer is banned by the lab")));
}

void TestHeadlessVolunteer::signalSendsACloseFrame() {
    QProcess volunteer;
    startVolunteer(volunteer, m_node.url(), m_node.path(QStringLiteral("leaving")));
    const QString id = waitForId(volunteer);
    QVERIFY(!id.isEmpty());
    ::kill(static_cast<pid_t>(volunteer.processId()), SIGTERM);
    QVERIFY(volunteer.waitForFinished(30000));
    QCOMPARE(volunteer.exitCode(), 0);
    const auto left = m_node.waitForLine(
        QRegularExpression(
            QStringLiteral(R"(volunteer %1 disconnected \((.*)\); \d+ task)").arg(id)),
        30000);
    QVERIFY2(left.hasMatch(), qPrintable(m_node.output()));
    QCOMPARE(left.captured(1), QStringLiteral("internal: peer closed the connection (1000)"));
}

void TestHeadlessVolunteer::desktopQuitSendsACloseFrame() {
    QSettings store(m_node.path(QStringLiteral("app.ini")), QSettings::IniFormat);
    store.setValue(QStringLiteral("general/start_at_login"), false); // set up: no first run
    AppOptions options{m_node.url(), m_node.path(QStringLiteral("desktop")), true,
                       [] { return HostState{}; }};
    options.trayAvailable = [] { return true; };
    QString id;
    {
        VolunteerApp app(options, store);
        app.bridge().setPollInterval(50);
        QTRY_VERIFY_WITH_TIMEOUT(!app.nodeStatuses().empty() &&
                                     app.nodeStatuses()[0].engine.link == LinkState::Connected,
                                 30000);
        id = QString::fromStdString(app.nodeStatuses()[0].engine.volunteerId);
    } // quit: the app and its engines go
    QVERIFY(!id.isEmpty());
    const auto left = m_node.waitForLine(
        QRegularExpression(
            QStringLiteral(R"(volunteer %1 disconnected \((.*)\); \d+ task)").arg(id)),
        30000);
    QVERIFY2(left.hasMatch(), qPrintable(m_node.output()));
    QCOMPARE(left.captured(1), QStringLiteral("internal: peer closed the connection (1000)"));
}

// The desktop app lists the OpenCL devices through a child goblin-volunteer: the same devices as
// listing them here.
void TestHeadlessVolunteer::childListsTheSameDevices() {
    const auto here = goblin::compute::listOpenClDevices();
    QVERIFY(here.has_value());
    const auto child = listDevicesInChild(QStringLiteral(GOBLIN_VOLUNTEER));
    QVERIFY2(child.has_value(), child ? "" : child.error().message.c_str());
    QCOMPARE(child->size(), here->size());
    for (std::size_t i = 0; i < here->size(); ++i) {
        QCOMPARE((*child)[i].index, (*here)[i].index);
        QCOMPARE((*child)[i].type, (*here)[i].type);
        QCOMPARE((*child)[i].name, (*here)[i].name);
    }
    QVERIFY(!listDevicesInChild(QStringLiteral("/nonexistent/goblin-volunteer")).has_value());
}

// The desktop binary (offscreen) ended by SIGTERM, as at logout: it quits like the tray's Quit —
// the node sees a normal close, and its single-instance socket is gone.
void TestHeadlessVolunteer::desktopBinaryQuitsOnSigterm() {
    const QString config = m_node.path(QStringLiteral("xdg-config"));
    const QString runtime = m_node.path(QStringLiteral("xdg-run"));
    QVERIFY(QDir().mkpath(runtime));
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    {
        QSettings store(config + QStringLiteral("/gpu-goblin/goblin-volunteer.conf"),
                        QSettings::IniFormat);
        store.setValue(QStringLiteral("nodes/size"), 1);
        store.setValue(QStringLiteral("nodes/1/url"), m_node.url());
        store.setValue(QStringLiteral("nodes/1/share"), 1);
    }
    QProcess app;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), config);
    env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtime);
    app.setProcessEnvironment(env);
    const QString identity = m_node.path(QStringLiteral("desktop-binary"));
    const qsizetype from = m_node.mark();
    app.start(QStringLiteral(GOBLIN_VOLUNTEER), {QStringLiteral("--config-dir"), identity});
    const auto joined = m_node.waitForLine(
        QRegularExpression(QStringLiteral(R"(volunteer (v-\S+) connected from )")), 30000, from);
    QVERIFY2(joined.hasMatch(), qPrintable(m_node.output()));
    QTRY_VERIFY_WITH_TIMEOUT(
        QDir(runtime)
                .entryList({QStringLiteral("goblin-volunteer-*")}, QDir::System | QDir::Files)
                .size() == 2,
        30000);
    ::kill(static_cast<pid_t>(app.processId()), SIGTERM);
    QVERIFY(app.waitForFinished(30000));
    QCOMPARE(app.exitStatus(), QProcess::NormalExit);
    QCOMPARE(app.exitCode(), 0);
    const auto left = m_node.waitForLine(
        QRegularExpression(QStringLiteral(R"(volunteer %1 disconnected \((.*)\); \d+ task)")
                               .arg(joined.captured(1))),
        30000, from);
    QVERIFY2(left.hasMatch(), qPrintable(m_node.output()));
    QCOMPARE(left.captured(1), QStringLiteral("internal: peer closed the connection (1000)"));
    QVERIFY(QDir(runtime)
                .entryList({QStringLiteral("goblin-volunteer-*")},
                           QDir::System | QDir::Files)
                .isEmpty()); // socket and lock removed
}

QTEST_MAIN(TestHeadlessVolunteer)
#include "test_headless_volunteer.moc"
