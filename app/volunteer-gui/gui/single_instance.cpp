#include "single_instance.hpp"

#include <QCryptographicHash>
#include <QDeadlineTimer>
#include <QDir>
#include <QFileInfo>
#include <QLocalSocket>
#include <QStandardPaths>
#include <QThread>

#include <unistd.h>

namespace goblin::volunteer {
namespace {

constexpr int kAnswerWithinMs = 5000; // a running app that is still starting gets this long
const QByteArray kRaise = QByteArrayLiteral("raise\n");

QString socketPathFor(const QString& configDir, const QString& runtimeDir) {
    QString dir = runtimeDir;
    if (dir.isEmpty())
        dir = QStandardPaths::writableLocation(QStandardPaths::RuntimeLocation);
    if (dir.isEmpty())
        dir = QDir::tempPath(); // the key names the user, so users do not collide here either
    return QDir(dir).filePath(instanceKey(configDir));
}

} // namespace

QString instanceKey(const QString& configDir) {
    const QFileInfo info(configDir);
    const QString canonical = info.canonicalFilePath();
    const QString dir = canonical.isEmpty() ? QDir::cleanPath(info.absoluteFilePath()) : canonical;
    const QByteArray hash =
        QCryptographicHash::hash(dir.toUtf8(), QCryptographicHash::Sha256).toHex().left(16);
    return QStringLiteral("goblin-volunteer-%1-%2")
        .arg(static_cast<qulonglong>(::getuid()))
        .arg(QString::fromLatin1(hash));
}

SingleInstance::SingleInstance(const QString& configDir, const QString& runtimeDir, QObject* parent)
    : QObject(parent), m_socketPath(socketPathFor(configDir, runtimeDir)),
      m_lock(m_socketPath + QStringLiteral(".lock")) {
    // A live holder is never stale by age; a dead one (its pid gone) is, whatever the age.
    m_lock.setStaleLockTime(0);
}

SingleInstance::~SingleInstance() {
    if (m_server)
        m_server->close(); // removes the socket file
}

InstanceRole SingleInstance::claim() {
    if (m_lock.tryLock(0)) {
        // The lock is ours: a socket file still there was left by a crashed instance.
        QLocalServer::removeServer(m_socketPath);
        m_server = std::make_unique<QLocalServer>();
        m_server->setSocketOptions(QLocalServer::UserAccessOption);
        connect(m_server.get(), &QLocalServer::newConnection, this, &SingleInstance::onConnection);
        if (!m_server->listen(m_socketPath))
            m_error = QStringLiteral("cannot listen on %1 (%2): a second launch cannot raise "
                                     "this window")
                          .arg(m_socketPath, m_server->errorString());
        return InstanceRole::Primary;
    }
    if (m_lock.error() != QLockFile::LockFailedError) {
        m_error = QStringLiteral("cannot create the lock file %1.lock").arg(m_socketPath);
        return InstanceRole::Failed;
    }
    if (askRunningToRaise())
        return InstanceRole::Secondary;
    qint64 pid = 0;
    QString host, app;
    m_lock.getLockInfo(&pid, &host, &app);
    m_error = QStringLiteral("goblin-volunteer (pid %1) already runs for this user and config "
                             "directory but does not answer on %2; not starting a second one")
                  .arg(pid)
                  .arg(m_socketPath);
    return InstanceRole::Failed;
}

// The running app may have taken the lock and not be listening yet: retry for a while.
bool SingleInstance::askRunningToRaise() {
    const QDeadlineTimer deadline(kAnswerWithinMs);
    do {
        QLocalSocket socket;
        socket.connectToServer(m_socketPath);
        if (socket.waitForConnected(500)) {
            socket.write(kRaise);
            const bool sent = socket.waitForBytesWritten(1000);
            socket.disconnectFromServer();
            if (sent)
                return true;
        }
        QThread::msleep(100);
    } while (!deadline.hasExpired());
    return false;
}

void SingleInstance::onConnection() {
    while (QLocalSocket* socket = m_server->nextPendingConnection()) {
        connect(socket, &QLocalSocket::disconnected, socket, &QObject::deleteLater);
        connect(socket, &QLocalSocket::readyRead, this, [this, socket] {
            // Only this user can connect (socket mode, runtime dir 0700); still, read a line.
            if (!socket->canReadLine() && socket->bytesAvailable() < kRaise.size())
                return;
            if (socket->readLine(64) == kRaise)
                Q_EMIT raiseRequested();
            socket->disconnectFromServer();
        });
    }
}

} // namespace goblin::volunteer
