// goblin-volunteer: the composition root. Runs the engine headless (--headless) or hands over to
// the Qt tray app (gui/run_gui.hpp), which drives the same engine. A build configured with
// -DGOBLIN_GUI=OFF has no desktop app and links no Qt (GOBLIN_WITH_GUI is 0): it always runs
// headless.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/program_options.hpp>

#include <unistd.h>

#include "compute_priority.hpp"
#include "config_folder.hpp"
#include "device_choice.hpp"
#include "device_setup.hpp"
#include "goblin/compute/blas_kernel.hpp"
#include "goblin/compute/opencl_devices.hpp"
#include "goblin/net/limits.hpp"
#include "headless_probe.hpp"
#include "headless_throttle.hpp"
#include "host_memory.hpp"
#include "volunteer_engine.hpp"
#include "volunteer_options.hpp"
#if GOBLIN_WITH_GUI
#include "run_gui.hpp"
#endif

namespace asio = boost::asio;
namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace goblin;

namespace {

void logLine(const std::string& line) {
    static std::mutex mutex;
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::lock_guard lock(mutex);
    std::cout << stamp << ' ' << line << std::endl;
}

std::int64_t totalMemoryMiB() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long size = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? (static_cast<std::int64_t>(pages) * size) >> 20 : 0;
}

// The headless throttle's settings: --threads, --cpu-percent, --idle-only; a battery pauses work
// as on the desktop; host memory use does not (the memory lent is fixed at start).
volunteer::ThrottleSettings headlessThrottleSettings(const po::variables_map& args) {
    volunteer::ThrottleSettings settings;
    settings.cpuCores = args["threads"].as<int>();
    settings.cpuLimitPercent = args["cpu-percent"].as<int>();
    settings.idleMinutes = args.count("idle-only") ? args["idle-minutes"].as<int>() : 0;
    settings.pauseAboveMemoryPercent = 0;
    return settings;
}

constexpr bool kHasGui = GOBLIN_WITH_GUI != 0;
constexpr const char* kNoGuiNote = "this goblin-volunteer has no desktop app (built with "
                                   "-DGOBLIN_GUI=OFF); it always runs headless";

} // namespace

int main(int argc, char** argv) {
    compute::restartWithBetterBlasKernel(argv);
    const po::options_description options = volunteer::volunteerOptions();
    try {
        const po::variables_map args = volunteer::parseVolunteerArgs(argc, argv, options);
        if (args.count("help")) {
            std::cout
                << "usage: goblin-volunteer --headless --node ws://HOST:PORT [options]\n"
                   "       goblin-volunteer --headless --node wss://HOST:PORT [--ca-file PEM] "
                   "[options]\n";
            if (!kHasGui)
                std::cout << "(" << kNoGuiNote << ")\n";
            std::cout << '\n' << options;
            return 0;
        }
        if (args.count("version")) {
            std::cout << "goblin-volunteer " << GOBLIN_VERSION << " (protocol "
                      << net::kProtocolVersion << (kHasGui ? ", desktop app" : ", headless only")
                      << ")\n";
            return 0;
        }
        const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        volunteer::checkVolunteerArgs(args, {hardware, totalMemoryMiB()});
        const bool desktop = kHasGui && !args.count("headless");
        if (desktop && (!args["cpu-percent"].defaulted() || args.count("idle-only")))
            throw volunteer::UsageError("--cpu-percent and --idle-only are for --headless; the "
                                        "desktop app sets them on its Settings page");
        const int threads = args["threads"].as<int>();
        const int cpuThreads = threads > 0 ? threads : hardware;
        const std::int64_t memoryMb = args["memory-mb"].as<std::int64_t>();
        const std::int64_t memoryBytes =
            memoryMb > 0 ? memoryMb << 20 : volunteer::availableMemoryBytes() / 2;
        volunteer::keepLargeBlocksMapped(memoryBytes);
        // Before any OpenCL call, so the driver compiles into the volunteer's own cache.
        const fs::path cacheDir = volunteer::defaultCacheDir();
        if (args.count("list-devices")) {
            (void)compute::prepareOpenClCache(cacheDir / "opencl");
            std::cout << volunteer::formatDeviceTable(
                {cpuThreads, memoryBytes, compute::currentBlasKernel()},
                compute::listOpenClDevices());
            return 0;
        }
        if (args.count("list-devices-tsv")) {
            (void)compute::prepareOpenClCache(cacheDir / "opencl");
            std::cout << volunteer::formatDeviceLines(compute::listOpenClDevices());
            return 0;
        }
        const fs::path configDir = args.count("config-dir")
                                       ? fs::path(args["config-dir"].as<std::string>())
                                       : volunteer::defaultConfigDir();
        volunteer::DeviceSetupOptions deviceOptions;
        deviceOptions.devices = args["devices"].as<std::string>();
        deviceOptions.cpuThreads = threads;
        deviceOptions.memoryBytes = memoryBytes;
        deviceOptions.cacheDir = cacheDir;
        deviceOptions.configDir = configDir;
        deviceOptions.sliceSeconds = args["gpu-slice-seconds"].as<double>();
        if (args.count("calibrate"))
            return volunteer::calibrateDevices(deviceOptions,
                                               args["calibrate-seconds"].as<double>(), logLine);
#if GOBLIN_WITH_GUI
        if (!args.count("headless"))
            return volunteer::runGui(
                argc, argv,
                args.count("node") ? QString::fromStdString(args["node"].as<std::string>())
                                   : QString(),
                QString::fromStdString(configDir.string()), args.count("minimized") > 0);
#endif
        // --minimized asks for the desktop app, which a GOBLIN_GUI=OFF build does not have.
        if (!kHasGui && args.count("minimized"))
            throw std::runtime_error(std::string("--minimized: ") + kNoGuiNote);
        if (!args.count("node"))
            throw std::runtime_error(kHasGui ? "--node ws://HOST:PORT is required"
                                             : std::string("--node ws://HOST:PORT is required (") +
                                                   kNoGuiNote + ")");

        volunteer::EngineSettings settings;
        settings.nodeUrl = args["node"].as<std::string>();
        auto url = net::parseWsUrl(settings.nodeUrl);
        if (!url)
            throw std::runtime_error(url.error().message);
        settings.url = *url;
        if (args.count("ca-file") && !url->tls) {
            std::string message = "--ca-file is for wss:// lab nodes; --node is ";
            throw std::runtime_error(message.append(settings.nodeUrl));
        }
        if (url->tls) {
            auto tls = net::makeClientTlsContext(
                args.count("ca-file") ? args["ca-file"].as<std::string>() : std::string());
            if (!tls)
                throw std::runtime_error(tls.error().message);
            settings.tls = std::move(*tls);
        }
        settings.configDir = configDir;
        settings.slots = args["slots"].as<int>();
        settings.threads = cpuThreads;
        settings.memoryBytes = memoryBytes;
        settings.inputCacheBytes = args["input-cache-mb"].as<std::int64_t>() << 20;
        settings.priority = *volunteer::parseComputePriority(args["priority"].as<std::string>());

        asio::io_context io(1);
        auto devices = volunteer::setUpDevices(deviceOptions, logLine);
        if (!devices)
            throw std::runtime_error(devices.error().message);
        settings.devices = std::move(devices->devices);
        settings.graphDevice = devices->graphDevice;
        auto backend = std::move(devices->backend);
        // Threads started before main (the BLAS library's pool) join the compute's priority;
        // this thread, the network's, keeps its own (the compute thread lowers itself).
        if (settings.priority == volunteer::ComputePriority::Low) {
            if (auto lowered = volunteer::lowerThreadsExcept(volunteer::currentThreadId());
                !lowered)
                logLine("compute priority left as started: " + lowered.error().message);
        }
        volunteer::VolunteerEngine engine(io, settings, std::move(backend), logLine);
        volunteer::HeadlessHostProbe probe;
        volunteer::HeadlessThrottle throttle(
            io, headlessThrottleSettings(args), [&probe] { return probe.sample(); },
            volunteer::systemThrottleClock(),
            [&engine](const volunteer::ComputePlan& plan) { engine.setPlan(plan); }, logLine);
        asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code& ec, int signal) {
            if (ec)
                return;
            logLine("signal " + std::to_string(signal) + ": stopping");
            throttle.stop();
            engine.stop();
            auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(500));
            timer->async_wait([&io, timer](const boost::system::error_code&) { io.stop(); });
        });
        // The engine gives up only when the node refuses it (banned, another protocol version):
        // then only the signal wait is left, so end that too and exit saying why.
        asio::steady_timer exitWatch(io);
        std::function<void()> watchExit = [&] {
            exitWatch.expires_after(std::chrono::milliseconds(200));
            exitWatch.async_wait([&](const boost::system::error_code& ec) {
                if (ec)
                    return;
                if (engine.exitState() == volunteer::EngineExit::Running)
                    return watchExit();
                throttle.stop();
                signals.cancel();
            });
        };
        watchExit();
        logLine("goblin-volunteer " + std::string(GOBLIN_VERSION) + ", " +
                std::to_string(settings.threads) + " thread(s) at " +
                std::to_string(args["cpu-percent"].as<int>()) + " % CPU time, " +
                args["priority"].as<std::string>() + " priority, lending " +
                std::to_string(settings.memoryBytes >> 20) + " MiB, OpenBLAS kernel " +
                compute::currentBlasKernel() + ", node " + settings.nodeUrl);
        throttle.start();
        if (args.count("idle-only"))
            logLine("idle only: after " + std::to_string(args["idle-minutes"].as<int>()) +
                    " min without input; idle time from " + probe.idleSource());
        engine.start();
        io.run();
        const auto& counters = engine.counters();
        logLine("stopped: " + std::to_string(counters.computed) + " task(s) computed, " +
                std::to_string(counters.accepted) + " accepted, " +
                std::to_string(counters.rejected) + " rejected");
        if (engine.exitState() != volunteer::EngineExit::Refused)
            return 0;
        std::cerr << "goblin-volunteer: " << engine.status().lastError << " (" << settings.nodeUrl
                  << "); exiting" << std::endl;
        return 3;
    } catch (const volunteer::UsageError& error) {
        std::cerr << "goblin-volunteer: " << error.what() << " (see --help)" << std::endl;
        return volunteer::kUsageExit;
    } catch (const std::exception& error) {
        std::cerr << "goblin-volunteer: " << error.what() << std::endl;
        return 1;
    }
}
