// Test helper: a real `goblin-labnode serve` on loopback with one researcher token, and the Python
// client submitting a job. Owned by the test's main thread.
#pragma once

#include <array>

#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

namespace goblin::testing {

class LabNodeFixture {
public:
    ~LabNodeFixture() {
        if (m_node.state() == QProcess::NotRunning)
            return;
        m_node.terminate();
        if (!m_node.waitForFinished(10000))
            m_node.kill();
    }

    // Before start(): serve TLS only with these PEM files; url() is then wss://127.0.0.1:PORT.
    void useTls(const QString& certFile, const QString& keyFile) {
        m_tlsArgs = {QStringLiteral("--tls-cert"), certFile, QStringLiteral("--tls-key"), keyFile};
    }

    // Empty when it worked, else why not (the caller QSKIPs or QFAILs with it).
    QString start() {
        if (!m_dir.isValid())
            return QStringLiteral("no temporary directory");
        if (!QFileInfo(labnode()).isExecutable())
            return QStringLiteral("goblin-labnode is not built");
        const QString db = m_dir.filePath(QStringLiteral("node.db"));
        QProcess init; // every command but init refuses a missing database
        init.start(labnode(), {QStringLiteral("init"), QStringLiteral("--db"), db});
        if (!init.waitForFinished(30000) || init.exitCode() != 0)
            return QStringLiteral("init failed: ") + init.readAllStandardError();
        QProcess add;
        add.start(labnode(), {QStringLiteral("researcher"), QStringLiteral("add"),
                              QStringLiteral("test@example.org"), QStringLiteral("--db"), db});
        if (!add.waitForFinished(30000) || add.exitCode() != 0)
            return QStringLiteral("researcher add failed: ") + add.readAllStandardError();
        m_token = QString::fromUtf8(add.readAllStandardOutput()).trimmed();
        m_node.start(labnode(),
                     QStringList{QStringLiteral("serve"), QStringLiteral("--db"), db,
                                 QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                                 QStringLiteral("--data-dir"),
                                 m_dir.filePath(QStringLiteral("data"))} +
                         m_tlsArgs);
        if (!m_node.waitForStarted(10000))
            return QStringLiteral("goblin-labnode did not start");
        // Notes the node logs at start (e.g. about its access pages) may come before this line.
        static const QRegularExpression listening(
            QStringLiteral(R"(^goblin-labnode listening on (127\.0\.0\.1:\d+)$)"));
        QDeadlineTimer deadline(20000);
        QRegularExpressionMatch match;
        QString lines;
        while (!match.hasMatch() && !deadline.hasExpired()) {
            if (!m_node.canReadLine()) {
                m_node.waitForReadyRead(100);
                continue;
            }
            const QString line = QString::fromUtf8(m_node.readLine()).trimmed();
            lines += line + QLatin1Char('\n');
            match = listening.match(line);
        }
        if (!match.hasMatch())
            return QStringLiteral("the node did not say where it listens: ") + lines;
        m_url = (m_tlsArgs.isEmpty() ? QStringLiteral("ws://") : QStringLiteral("wss://")) +
                match.captured(1);
        return {};
    }

    // Waits for a line of the node's output that matches, among the lines after the first `from`
    // characters of what was read (0: everything so far, see mark()).
    QRegularExpressionMatch waitForLine(const QRegularExpression& pattern, int milliseconds,
                                        qsizetype from = 0) {
        QDeadlineTimer deadline(milliseconds);
        for (;;) {
            mark();
            for (const QString& line : m_seen.mid(from).split(QLatin1Char('\n')))
                if (auto match = pattern.match(line); match.hasMatch())
                    return match;
            if (deadline.hasExpired())
                return {};
            m_node.waitForReadyRead(100);
        }
    }
    // Reads what the node printed so far; returns how much that is (a `from` for waitForLine).
    qsizetype mark() {
        while (m_node.canReadLine())
            m_seen += QString::fromUtf8(m_node.readLine());
        return m_seen.size();
    }
    QString output() const { return m_seen; }
    QString db() const { return m_dir.filePath(QStringLiteral("node.db")); }
    QString url() const { return m_url; }
    QString path(const QString& name) const { return m_dir.filePath(name); }

    static QString python() { return QStringLiteral(GOBLIN_SOURCE_DIR "/.venv/bin/python"); }
    static bool havePython() { return QFileInfo(python()).isExecutable(); }

    // Submits C = A·B of f64 random A (rows×1024) and B (1024×1024), cut into tiles of tileRows
    // rows, and checks the product; prints "ok" and exits 0 when it is right.
    void submit(QProcess& researcher, int rows, int tileRows) const {
        submitMatmul(researcher, {rows, 1024, 1024, tileRows, 1024, 7});
    }

    // 16 tiles of 8×8 (K = 16): each tiny enough for a volunteer at full duty to compute it
    // on its io thread; the process prints "ok" when C is right.
    void submitTiny(QProcess& researcher) const { submitMatmul(researcher, {32, 16, 32, 8, 8, 8}); }

    // m, k, n, tile rows, tile columns, seed of the random f64 A (m×k) and B (k×n).
    void submitMatmul(QProcess& researcher, const std::array<int, 6>& shape) const {
        static const char* script = R"(
import sys, numpy as np, goblin
m, k, n, tile_rows, tile_cols, seed = (int(value) for value in sys.argv[3:9])
rng = np.random.default_rng(seed)
A = rng.random((m, k)); B = rng.random((k, n))
with goblin.connect(sys.argv[1], token=sys.argv[2], timeout=120) as client:
    C = client.matmul(A, B, tile=[tile_rows, tile_cols])
    assert np.allclose(C, A @ B), "wrong product"
print("ok", client.last_summary["verdicts"])
)";
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("PYTHONPATH"), QStringLiteral(GOBLIN_SOURCE_DIR "/python"));
        researcher.setProcessEnvironment(env);
        QStringList arguments{QStringLiteral("-c"), QString::fromUtf8(script), m_url, m_token};
        for (int value : shape)
            arguments << QString::number(value);
        researcher.start(python(), arguments);
    }

    // GOBLIN_LABNODE in the environment overrides the built one (e.g. a plain node beside a
    // sanitizer build of the volunteer).
    static QString labnode() {
        const QString chosen = qEnvironmentVariable("GOBLIN_LABNODE");
        return chosen.isEmpty() ? QStringLiteral(GOBLIN_LABNODE) : chosen;
    }

private:
    QTemporaryDir m_dir;
    QProcess m_node;
    QString m_seen; // the node's output read by waitForLine
    QString m_url;
    QString m_token;
    QStringList m_tlsArgs;
};

} // namespace goblin::testing
