#include "headless_probe.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "host_readings.hpp"
#if GOBLIN_WITH_X11
#include "x11_idle.hpp"
#endif

namespace goblin::volunteer {

#if GOBLIN_WITH_X11
HeadlessHostProbe::HeadlessHostProbe(HeadlessProbeSources sources) : m_sources(std::move(sources)) {
    const char* env = std::getenv("DISPLAY");
    const std::string display = m_sources.x11Display ? *m_sources.x11Display : (env ? env : "");
    if (display.empty())
        return;
    if (auto probe = X11IdleProbe::open(display))
        m_x11 = std::move(*probe);
}
#else
// A build without X11 (GOBLIN_GUI=OFF) measures idle time on terminals only.
class X11IdleProbe {};
HeadlessHostProbe::HeadlessHostProbe(HeadlessProbeSources sources)
    : m_sources(std::move(sources)) {}
#endif

HeadlessHostProbe::~HeadlessHostProbe() = default;

HostState HeadlessHostProbe::sample() {
    HostState host;
    host.idleSeconds = probeIdle();
    readPowerSupply(m_sources.powerSupplyRoot, host);
    host.memoryUsedPercent = memoryUsedPercent(m_sources.meminfo);
    host.hardwareThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return host;
}

std::optional<double> HeadlessHostProbe::probeIdle() {
#if GOBLIN_WITH_X11
    if (m_x11) {
        if (auto idle = m_x11->idleSeconds()) {
            m_idleSource = "X11 screensaver extension";
            return idle;
        }
    }
#endif
    if (auto idle = ttyIdle(m_sources.tty)) {
        m_idleSource = describe(*idle);
        return idle->seconds;
    }
    m_idleSource = "unavailable: cannot read " + m_sources.tty.utmp.string();
    return std::nullopt;
}

} // namespace goblin::volunteer
