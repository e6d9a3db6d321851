#include "run_gui.hpp"

#include <QApplication>

#include "volunteer_app.hpp"

namespace goblin::volunteer {

int runGui(int& argc, char** argv, const QString& nodeUrl, const QString& configDir,
           bool minimized) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("gpu-goblin"));
    QApplication::setApplicationName(QStringLiteral("goblin-volunteer"));
    QSettings store;
    VolunteerApp volunteer(AppOptions{nodeUrl, configDir, minimized, {}}, store);
    return QApplication::exec();
}

} // namespace goblin::volunteer
