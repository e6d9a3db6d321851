// One desktop app per user and config dir (GUI thread): the first launch claims a lock file and
// listens on a local socket in the user's runtime directory; a later launch finds the lock taken,
// asks the running one to raise its window and exits, so two engines never share an identity.
// A crashed instance's lock (its process is gone) and socket file do not block the next start.
#pragma once

#include <QLocalServer>
#include <QLockFile>
#include <QObject>
#include <QString>

#include <memory>

namespace goblin::volunteer {

enum class InstanceRole { Primary, Secondary, Failed };

// The socket's name for this user and config dir ("goblin-volunteer-<uid>-<hash of the dir>").
QString instanceKey(const QString& configDir);

class SingleInstance : public QObject {
    Q_OBJECT
public:
    // runtimeDir: where the lock and socket live (empty: XDG_RUNTIME_DIR, else the temp dir).
    explicit SingleInstance(const QString& configDir, const QString& runtimeDir = {},
                            QObject* parent = nullptr);
    ~SingleInstance() override;

    // Primary: this process runs the app (and hears later launches). Secondary: another one
    // runs and was asked to raise its window. Failed: neither could be settled (see error()).
    InstanceRole claim();
    QString error() const { return m_error; }
    QString socketPath() const { return m_socketPath; }

Q_SIGNALS:
    void raiseRequested(); // a later launch asked for the window

private:
    bool askRunningToRaise();
    void onConnection();

    QString m_socketPath;
    QLockFile m_lock;
    std::unique_ptr<QLocalServer> m_server;
    QString m_error;
};

} // namespace goblin::volunteer
