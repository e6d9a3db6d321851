// goblin-volunteer-screenshots: saves PNGs of the window's pages (QWidget::grab), the lab nodes
// page with faults, and, under a display with a tray host, the tray icon in each state (a grab
// of the screen's top strip).
// Driven by scripts/screenshots.sh; not installed.
#include <QApplication>
#include <QDir>
#include <QLineEdit>
#include <QPainter>
#include <QScreen>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>

#include "main_window.hpp"
#include "nodes_page.hpp"
#include "tray_icon.hpp"
#include "volunteer_app.hpp"

using namespace goblin::volunteer;

namespace {

void settle(int milliseconds) {
    QEventLoop loop;
    QTimer::singleShot(milliseconds, &loop, &QEventLoop::quit);
    loop.exec();
}

const QList<VolunteerState> kStates{VolunteerState::Computing, VolunteerState::PausedByUser,
                                    VolunteerState::Waiting, VolunteerState::Disconnected,
                                    VolunteerState::Error};

// The state icons at 64 px, side by side and named, for the docs.
void saveIconSheet(const QString& path) {
    QImage sheet(5 * 110, 100, QImage::Format_ARGB32);
    sheet.fill(Qt::white);
    QPainter painter(&sheet);
    for (int i = 0; i < kStates.size(); ++i) {
        painter.drawPixmap(110 * i + 23, 6, stateIcon(kStates[i]).pixmap(64, 64));
        painter.drawText(QRect(110 * i, 74, 110, 20), Qt::AlignCenter, stateName(kStates[i]));
    }
    painter.end();
    sheet.save(path);
}

// The lab nodes page with faults: a node nobody answers at (retried with back-off) and an
// address typed wrong.
void saveNodeFaults(VolunteerApp& app, const QDir& out) {
    app.addNode(QStringLiteral("ws://127.0.0.1:9"));
    settle(2500);
    NodesPage* page = app.window().nodesPage();
    page->findChild<QLineEdit*>(QStringLiteral("nodeUrl"))
        ->setText(QStringLiteral("lab.example.org"));
    Q_EMIT page->findChild<QLineEdit*>(QStringLiteral("nodeUrl"))->returnPressed();
    app.window().tabs()->setCurrentWidget(page);
    settle(300);
    app.window().grab().save(out.filePath(QStringLiteral("window-nodes-faults.png")));
}

} // namespace

int main(int argc, char** argv) {
    QApplication qapp(argc, argv);
    const QStringList args = QApplication::arguments();
    if (args.size() < 2) {
        qCritical("usage: goblin-volunteer-screenshots OUT_DIR [NODE_URL…] [--tray] [--gpu]");
        return 2;
    }
    const QDir out(args[1]);
    QDir().mkpath(out.path());
    QStringList nodes;
    for (const QString& arg : args.mid(2))
        if (!arg.startsWith(QLatin1String("--")))
            nodes << arg;
    QTemporaryDir dir;
    QSettings store(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    store.setValue(QStringLiteral("cpu/limit_percent"), 50);
    store.setValue(QStringLiteral("schedule/hours"),
                   QStringLiteral("Mon-Fri 18:00-08:00; Sat-Sun 00:00-24:00"));
    // The first node gets three times the second's share.
    store.setValue(QStringLiteral("nodes/size"), nodes.size());
    for (int i = 0; i < nodes.size(); ++i) {
        store.setValue(QStringLiteral("nodes/%1/url").arg(i + 1), nodes[i]);
        store.setValue(QStringLiteral("nodes/%1/share").arg(i + 1), i == 0 ? 3 : 1);
    }
    if (args.contains(QStringLiteral("--gpu"))) { // the first OpenCL device, at 60 % of its time
        store.setValue(QStringLiteral("gpus/size"), 1);
        store.setValue(QStringLiteral("gpus/1/device"), QStringLiteral("gpu0"));
        store.setValue(QStringLiteral("gpus/1/enabled"), true);
        store.setValue(QStringLiteral("gpus/1/limit_percent"), 60);
    }
    // The real host probes, so the status page says what works on this machine.
    AppOptions options{{}, dir.filePath(QStringLiteral("identity")), false, {}};
    if (args.contains(QStringLiteral("--gpu"))) // CI's only OpenCL device is PoCL's CPU
        options.openClCpuDevices = OpenClCpuDevices::Offer;
    VolunteerApp app(options, store);
    app.window().show();
    settle(nodes.isEmpty() ? 500 : 6000); // let the engines connect and compute a while
    const QStringList pages{QStringLiteral("status"), QStringLiteral("nodes"),
                            QStringLiteral("settings"), QStringLiteral("log")};
    for (int i = 0; i < pages.size(); ++i) {
        app.window().tabs()->setCurrentIndex(i);
        settle(100);
        app.window().grab().save(out.filePath(QStringLiteral("window-%1.png").arg(pages[i])));
    }
    saveIconSheet(out.filePath(QStringLiteral("icons.png")));
    if (!nodes.isEmpty())
        saveNodeFaults(app, out);
    if (!args.contains(QStringLiteral("--tray")) || !app.tray())
        return 0;
    app.window().hide();
    QScreen* screen = QGuiApplication::primaryScreen();
    for (VolunteerState state : kStates) {
        app.tray()->showState(state, stateName(state));
        settle(800);
        const QRect strip(screen->geometry().width() - 160, 0, 160, 40);
        screen->grabWindow(0, strip.x(), strip.y(), strip.width(), strip.height())
            .save(out.filePath(QStringLiteral("tray-%1.png").arg(stateName(state))));
    }
    return 0;
}
