#include "x11_idle.hpp"

// Xlib's macros (None, Bool, Status, …) stay in this file: it includes nothing after them.
#include <X11/Xlib.h>
#include <X11/extensions/scrnsaver.h>

namespace goblin::volunteer {

struct X11IdleProbe::Connection {
    Display* display = nullptr;
    XScreenSaverInfo* info = nullptr;
    ~Connection() {
        if (info)
            XFree(info);
        if (display)
            XCloseDisplay(display);
    }
};

Expected<std::unique_ptr<X11IdleProbe>> X11IdleProbe::open(const std::string& display) {
    auto connection = std::make_unique<Connection>();
    connection->display = XOpenDisplay(display.empty() ? nullptr : display.c_str());
    if (!connection->display) {
        return makeError(ErrorCode::NotFound,
                         display.empty() ? std::string("no X11 display ($DISPLAY unset)")
                                         : "cannot open the X11 display '" + display + "'");
    }
    int eventBase = 0, errorBase = 0;
    if (!XScreenSaverQueryExtension(connection->display, &eventBase, &errorBase))
        return makeError(ErrorCode::NotFound,
                         "the X server has no screensaver extension (MIT-SCREEN-SAVER)");
    connection->info = XScreenSaverAllocInfo();
    if (!connection->info)
        return makeError(ErrorCode::Internal, "XScreenSaverAllocInfo failed");
    return std::unique_ptr<X11IdleProbe>(new X11IdleProbe(std::move(connection)));
}

X11IdleProbe::X11IdleProbe(std::unique_ptr<Connection> connection)
    : m_connection(std::move(connection)) {}

X11IdleProbe::~X11IdleProbe() = default;

std::optional<double> X11IdleProbe::idleSeconds() {
    Display* display = m_connection->display;
    if (!XScreenSaverQueryInfo(display, DefaultRootWindow(display), m_connection->info))
        return std::nullopt;
    return static_cast<double>(m_connection->info->idle) / 1000.0;
}

} // namespace goblin::volunteer
