#include "run_gui.hpp"

#include <QApplication>

#include <cstdio>

#include "device_listing.hpp"
#include "single_instance.hpp"
#include "volunteer_app.hpp"

namespace goblin::volunteer {

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
    QSettings store;
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
