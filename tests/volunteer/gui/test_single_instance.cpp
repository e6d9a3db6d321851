// One desktop app per user and config dir: a second claim finds the first, asks it to raise its
// window and does not become an app; another config dir is another app; a crashed instance's
// lock and socket file (its process killed) do not block the next start.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <csignal>
#include <cstdio>

#include <unistd.h>

#include "single_instance.hpp"

using namespace goblin::volunteer;

namespace {

const char* kCrashEnv = "GOBLIN_TEST_CLAIM_THEN_CRASH"; // "<config dir>|<runtime dir>"

// The helper process: claims, says so, and dies without cleaning up (as a crash would).
int claimThenCrash(const QString& spec) {
    const QStringList parts = spec.split(QLatin1Char('|'));
    SingleInstance instance(parts.value(0), parts.value(1));
    if (instance.claim() != InstanceRole::Primary)
        return 2;
    std::printf("claimed\n");
    std::fflush(stdout);
    ::kill(::getpid(), SIGKILL);
    return 3;
}

} // namespace

class TestSingleInstance : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init();
    void keyIsPerUserAndConfigDir();
    void secondLaunchRaisesTheFirst();
    void otherConfigDirIsAnotherApp();
    void quittingReleasesTheClaim();
    void crashedInstanceDoesNotBlock();

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString runtime() const { return m_dir->filePath(QStringLiteral("run")); }
    QString config(const QString& name) const { return m_dir->filePath(name); }
};

void TestSingleInstance::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    QVERIFY(QDir().mkpath(runtime()));
}

void TestSingleInstance::keyIsPerUserAndConfigDir() {
    const QString key = instanceKey(config(QStringLiteral("a")));
    QVERIFY(key.startsWith(QStringLiteral("goblin-volunteer-%1-").arg(::getuid())));
    QCOMPARE(instanceKey(config(QStringLiteral("a/"))), key);
    QCOMPARE(instanceKey(config(QStringLiteral("b/../a"))), key);
    QVERIFY(instanceKey(config(QStringLiteral("b"))) != key);
}

void TestSingleInstance::secondLaunchRaisesTheFirst() {
    SingleInstance first(config(QStringLiteral("a")), runtime());
    QCOMPARE(first.claim(), InstanceRole::Primary);
    QVERIFY2(first.error().isEmpty(), qPrintable(first.error()));
    QVERIFY(QFileInfo::exists(first.socketPath()));
    QSignalSpy raised(&first, &SingleInstance::raiseRequested);
    SingleInstance second(config(QStringLiteral("a")), runtime());
    QCOMPARE(second.claim(), InstanceRole::Secondary);
    QVERIFY(raised.wait(5000));
    QCOMPARE(raised.count(), 1);
    SingleInstance third(config(QStringLiteral("a/")), runtime()); // the same dir, spelt otherwise
    QCOMPARE(third.claim(), InstanceRole::Secondary);
    QTRY_COMPARE(raised.count(), 2);
}

void TestSingleInstance::otherConfigDirIsAnotherApp() {
    SingleInstance first(config(QStringLiteral("a")), runtime());
    QCOMPARE(first.claim(), InstanceRole::Primary);
    SingleInstance other(config(QStringLiteral("b")), runtime());
    QCOMPARE(other.claim(), InstanceRole::Primary);
}

void TestSingleInstance::quittingReleasesTheClaim() {
    QString socket;
    {
        SingleInstance first(config(QStringLiteral("a")), runtime());
        QCOMPARE(first.claim(), InstanceRole::Primary);
        socket = first.socketPath();
    }
    QVERIFY(!QFileInfo::exists(socket));
    SingleInstance next(config(QStringLiteral("a")), runtime());
    QCOMPARE(next.claim(), InstanceRole::Primary);
}

void TestSingleInstance::crashedInstanceDoesNotBlock() {
    QProcess holder;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromLatin1(kCrashEnv),
               config(QStringLiteral("a")) + QLatin1Char('|') + runtime());
    holder.setProcessEnvironment(env);
    holder.start(QCoreApplication::applicationFilePath(), {});
    QVERIFY(holder.waitForFinished(20000));
    QCOMPARE(holder.readAllStandardOutput(), QByteArray("claimed\n"));
    QCOMPARE(holder.exitStatus(), QProcess::CrashExit); // killed: nothing was cleaned up
    const SingleInstance probe(config(QStringLiteral("a")), runtime());
    QVERIFY(QFileInfo::exists(probe.socketPath())); // the stale socket file
    QVERIFY(QFileInfo::exists(probe.socketPath() + QStringLiteral(".lock")));

    SingleInstance next(config(QStringLiteral("a")), runtime());
    QCOMPARE(next.claim(), InstanceRole::Primary);
    QVERIFY2(next.error().isEmpty(), qPrintable(next.error()));
    QSignalSpy raised(&next, &SingleInstance::raiseRequested);
    SingleInstance second(config(QStringLiteral("a")), runtime());
    QCOMPARE(second.claim(), InstanceRole::Secondary); // and it listens again
    QVERIFY(raised.wait(5000));
}

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsSet(kCrashEnv)) {
        QCoreApplication app(argc, argv);
        return claimThenCrash(qEnvironmentVariable(kCrashEnv));
    }
    QCoreApplication app(argc, argv);
    TestSingleInstance test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_single_instance.moc"
