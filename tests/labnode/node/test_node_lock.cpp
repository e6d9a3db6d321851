// Tests of NodeLock: one holder at a time, the refusal names the holder, the lock is released
// when its holder goes away.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <optional>
#include <string>

#include "node/node_lock.hpp"

using goblin::labnode::NodeLock;
using goblin::labnode::nodeOwnerDescription;

class TestNodeLock : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void secondHolderIsRefusedWithTheFirstsDescription() {
        QTemporaryDir dir;
        const std::string file = dir.filePath("node.db.lock").toStdString();
        auto first = NodeLock::acquire(file, "database node.db");
        QVERIFY(first.has_value());
        first->describe(nodeOwnerDescription("listening on 127.0.0.1:7123"));
        auto second = NodeLock::acquire(file, "database node.db");
        QVERIFY(!second.has_value());
        const std::string message = second.error().message;
        QVERIFY2(message.find("listening on 127.0.0.1:7123") != std::string::npos, message.c_str());
        QVERIFY2(message.find("pid " + std::to_string(QCoreApplication::applicationPid())) !=
                     std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("database node.db") != std::string::npos, message.c_str());
    }

    void releasedWhenTheHolderGoes() {
        QTemporaryDir dir;
        const std::string file = dir.filePath("node.db.lock").toStdString();
        {
            auto first = NodeLock::acquire(file, "database node.db");
            QVERIFY(first.has_value());
            QVERIFY(!NodeLock::acquire(file, "database node.db").has_value());
        }
        auto again = NodeLock::acquire(file, "database node.db");
        QVERIFY(again.has_value());
    }

    void movedLockStaysHeld() {
        QTemporaryDir dir;
        const std::string file = dir.filePath("x.lock").toStdString();
        std::optional<NodeLock> kept;
        {
            auto first = NodeLock::acquire(file, "x");
            QVERIFY(first.has_value());
            kept.emplace(std::move(*first));
        }
        QVERIFY(!NodeLock::acquire(file, "x").has_value());
        kept.reset();
        QVERIFY(NodeLock::acquire(file, "x").has_value());
    }

    void unwritableFolderIsAnError() {
        auto lock = NodeLock::acquire("/nonexistent-goblin-folder/node.db.lock", "x");
        QVERIFY(!lock.has_value());
        QVERIFY(lock.error().message.find("cannot open lock file") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestNodeLock)
#include "test_node_lock.moc"
