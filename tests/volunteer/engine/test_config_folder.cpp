// One config folder: the desktop settings that earlier versions kept apart
// ($XDG_CONFIG_HOME/gpu-goblin/goblin-volunteer.conf) move into the identity's folder once, and
// never over settings already there.
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <sstream>

#include "config_folder.hpp"

using namespace goblin::volunteer;
namespace fs = std::filesystem;

class TestConfigFolder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void defaultsFollowXdg();
    void legacySettingsMoveInOnce();
    void existingSettingsAreKept();
};

namespace {

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

std::string read(const fs::path& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

} // namespace

void TestConfigFolder::defaultsFollowXdg() {
    QTemporaryDir dir;
    qputenv("XDG_CONFIG_HOME", dir.path().toUtf8());
    const fs::path home = dir.path().toStdString();
    QCOMPARE(defaultConfigDir(), home / "goblin-volunteer");
    QCOMPARE(legacySettingsFile(), home / "gpu-goblin" / "goblin-volunteer.conf");
    QCOMPARE(settingsFile(home / "x"), home / "x" / "settings.conf");
    qunsetenv("XDG_CONFIG_HOME");
}

void TestConfigFolder::legacySettingsMoveInOnce() {
    QTemporaryDir dir;
    const fs::path home = dir.path().toStdString();
    const fs::path legacy = home / "gpu-goblin" / "goblin-volunteer.conf";
    const fs::path folder = home / "goblin-volunteer";
    write(legacy, "[cpu]\nlimit_percent=40\n");
    write(folder / "identity.json", "{}");
    auto moved = migrateLegacySettings(folder, legacy);
    QVERIFY(moved);
    QVERIFY(moved->find("moved the settings") != std::string::npos);
    QCOMPARE(read(settingsFile(folder)), std::string("[cpu]\nlimit_percent=40\n"));
    QVERIFY(!fs::exists(legacy));
    QVERIFY(!fs::exists(legacy.parent_path())); // the emptied legacy folder went too
    QVERIFY(fs::exists(folder / "identity.json"));
    auto again = migrateLegacySettings(folder, legacy);
    QVERIFY(again && again->empty());
}

void TestConfigFolder::existingSettingsAreKept() {
    QTemporaryDir dir;
    const fs::path home = dir.path().toStdString();
    const fs::path legacy = home / "gpu-goblin" / "goblin-volunteer.conf";
    const fs::path folder = home / "goblin-volunteer";
    write(legacy, "old");
    write(settingsFile(folder), "new");
    auto moved = migrateLegacySettings(folder, legacy);
    QVERIFY(moved && moved->empty());
    QCOMPARE(read(settingsFile(folder)), std::string("new"));
    QVERIFY(fs::exists(legacy)); // left alone, never merged over newer settings
}

QTEST_APPLESS_MAIN(TestConfigFolder)
#include "test_config_folder.moc"
