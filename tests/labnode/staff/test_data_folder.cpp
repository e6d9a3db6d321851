// Tests of the default data folder of `serve` on real folders: each database gets its own, a
// goblin-data folder made by an earlier version is kept by the database it belongs to (or by the
// first one served beside it), and never shared with a second database.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "staff/data_folder.hpp"

using goblin::labnode::claimDataFolder;
using goblin::labnode::defaultDataFolder;
namespace fs = std::filesystem;

class TestDataFolder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void twoDatabasesInOneFolderGetTwoFolders() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        const auto a = defaultDataFolder(root / "a.db");
        const auto b = defaultDataFolder(root / "b.db");
        QCOMPARE(a.path.string(), (root / "a.db.goblin-data").string());
        QCOMPARE(b.path.string(), (root / "b.db.goblin-data").string());
        fs::create_directories(a.path);
        QVERIFY(claimDataFolder(a.path, root / "a.db").has_value());
        QCOMPARE(defaultDataFolder(root / "a.db").path.string(), (a.path).string());
        QCOMPARE(defaultDataFolder(root / "b.db").path.string(), (b.path).string());
    }

    void anEarlierGoblinDataFolderIsKeptByTheFirstDatabaseOnly() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        const fs::path legacy = root / "goblin-data";
        fs::create_directories(legacy / "blobs");
        const auto first = defaultDataFolder(root / "labnode.db");
        QCOMPARE(first.path.string(), (legacy).string());
        QVERIFY(first.why.find("earlier version") != std::string::npos);
        QVERIFY(claimDataFolder(legacy, root / "labnode.db").has_value());
        std::ifstream owner(legacy / ".goblin-database");
        std::string name;
        std::getline(owner, name);
        QCOMPARE(name, std::string("labnode.db"));
        // Kept on every later start, also when the database is named by a relative path.
        QCOMPARE(defaultDataFolder(root / "labnode.db").path.string(), (legacy).string());
        const fs::path before = fs::current_path();
        fs::current_path(root);
        QCOMPARE(defaultDataFolder("labnode.db").path.string(), (legacy).string());
        fs::current_path(before);
        // A second database beside it gets a folder of its own.
        QCOMPARE(defaultDataFolder(root / "other.db").path.string(),
                 (root / "other.db.goblin-data").string());
        // Claiming again keeps the first owner.
        QVERIFY(claimDataFolder(legacy, root / "other.db").has_value());
        QCOMPARE(defaultDataFolder(root / "labnode.db").path.string(), (legacy).string());
    }

    void aDatabasesOwnFolderWinsOverGoblinData() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        fs::create_directories(root / "goblin-data");
        fs::create_directories(root / "node.db.goblin-data");
        QCOMPARE(defaultDataFolder(root / "node.db").path.string(),
                 (root / "node.db.goblin-data").string());
    }
};

QTEST_APPLESS_MAIN(TestDataFolder)
#include "test_data_folder.moc"
