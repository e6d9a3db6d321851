// User idle time from the X11 screensaver extension (MIT-SCREEN-SAVER, XScreenSaverQueryInfo):
// milliseconds since the last input the X server saw. Owns one Xlib display connection; used by
// one thread (the GUI thread's HostProbe or the headless probe). No Qt.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::volunteer {

class X11IdleProbe {
public:
    // Opens `display` (":0"; empty: $DISPLAY). NotFound with the reason when there is no X
    // display to open or it lacks the screensaver extension.
    [[nodiscard]] static Expected<std::unique_ptr<X11IdleProbe>> open(const std::string& display);
    ~X11IdleProbe();
    X11IdleProbe(const X11IdleProbe&) = delete;
    X11IdleProbe& operator=(const X11IdleProbe&) = delete;

    // Seconds since the user's last keyboard or pointer input; empty if the query fails.
    std::optional<double> idleSeconds();

private:
    struct Connection;
    explicit X11IdleProbe(std::unique_ptr<Connection> connection);
    std::unique_ptr<Connection> m_connection;
};

} // namespace goblin::volunteer
