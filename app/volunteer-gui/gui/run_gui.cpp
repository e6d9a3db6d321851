#include "run_gui.hpp"

#include <QApplication>
#include <QSocketNotifier>

#include <csignal>
#include <cstdio>

#include <sys/socket.h>
#include <unistd.h>

#include "config_folder.hpp"
#include "device_listing.hpp"
#include "single_instance.hpp"
#include "volunteer_app.hpp"

namespace goblin::volunteer {
namespace {

int g_signalPipe[2] = {-1, -1};

void onSignal(int) {
    const char byte = 1;
    (void)!::write(g_signalPipe[1], &byte, 1); // async-signal-safe; the GUI thread quits
}

// SIGTERM (the session ending, systemctl) and SIGINT quit like the tray's Quit: windows and
// engines close in order, so the close frames leave and the single-instance socket goes.
void quitOnSignals(QObject* context) {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalPipe) != 0)
        return;
    auto* notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, context);
    QObject::connect(notifier, &QSocketNotifier::activated, context, [] {
        char byte = 0;
        (void)!::read(g_signalPipe[0], &byte, 1);
        QApplication::quit();
    });
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGINT, &action, nullptr);
}

} // namespace

int runGui(int& argc, char** argv, const QString& nodeUrl, const QString& configDir,
           bool minimized) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("gpu-goblin"));
    QApplication::setApplicationName(QStringLiteral("goblin-volunteer"));
    // One app per user and identity: a second launch raises the first one's window and leaves.
    SingleInstance instance(configDir);
    switch (instance.claim()) {
    case InstanceRole::Secondary:
        std::fprintf(stdout,
                     "goblin-volunteer already runs for this user (config %s): raised "
                     "its window\n",
                     qPrintable(configDir));
        return 0;
    case InstanceRole::Failed:
        std::fprintf(stderr, "goblin-volunteer: %s\n", qPrintable(instance.error()));
        return 1;
    case InstanceRole::Primary:
        break;
    }
    quitOnSignals(&app); // before any engine starts: a signal from now on quits in order
    // One folder holds the settings and the identity; settings of earlier versions move in.
    const std::filesystem::path folder = configDir.toStdString();
    if (auto moved = migrateLegacySettings(folder, legacySettingsFile()); !moved)
        std::fprintf(stderr, "goblin-volunteer: %s\n", moved.error().message.c_str());
    else if (!moved->empty())
        std::fprintf(stdout, "goblin-volunteer: %s\n", moved->c_str());
    QSettings store(QString::fromStdString(settingsFile(folder).string()), QSettings::IniFormat);
    AppOptions options{nodeUrl, configDir, minimized, {}};
    options.listDevices = [] {
        return listDevicesInChild(QCoreApplication::applicationFilePath());
    };
    VolunteerApp volunteer(options, store);
    if (!instance.error().isEmpty())
        std::fprintf(stderr, "goblin-volunteer: %s\n", qPrintable(instance.error()));
    QObject::connect(&instance, &SingleInstance::raiseRequested, &volunteer,
                     &VolunteerApp::raiseWindow);
    return QApplication::exec();
}

} // namespace goblin::volunteer
