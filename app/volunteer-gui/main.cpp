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

#include "device_choice.hpp"
#include "device_setup.hpp"
#include "goblin/compute/blas_kernel.hpp"
#include "goblin/compute/opencl_devices.hpp"
#include "host_memory.hpp"
#include "volunteer_engine.hpp"
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

fs::path defaultConfigDir() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
        return fs::path(xdg) / "goblin-volunteer";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".config" / "goblin-volunteer";
    return fs::current_path() / ".goblin-volunteer";
}

constexpr bool kHasGui = GOBLIN_WITH_GUI != 0;
constexpr const char* kNoGuiNote = "this goblin-volunteer has no desktop app (built with "
                                   "-DGOBLIN_GUI=OFF); it always runs headless";

} // namespace

int main(int argc, char** argv) {
    compute::restartWithBetterBlasKernel(argv);
    po::options_description options("goblin-volunteer options");
    options.add_options()("help,h", "show this help")("headless", "run without a window")(
        "minimized", "desktop app: start in the tray, window hidden")(
        "node", po::value<std::string>(),
        "lab node address, ws://HOST:PORT or wss://HOST:PORT (TLS)")(
        "ca-file", po::value<std::string>(),
        "PEM file of the CA certificate(s) a wss:// node's certificate must chain to (default: "
        "the system's trust store)")("threads", po::value<int>()->default_value(0),
                                     "CPU threads to compute with (0: all cores)")(
        "slots", po::value<int>()->default_value(2),
        "tasks in flight at once (1-16)")("memory-mb", po::value<std::int64_t>()->default_value(0),
                                          "memory to lend, MiB (0: half of what is available)")(
        "input-cache-mb", po::value<std::int64_t>()->default_value(256),
        "graph inputs (model parameters) kept between tasks, MiB, at most a quarter of the memory "
        "lent (0: every task brings its inputs)")("config-dir", po::value<std::string>(),
                                                  "where the identity is kept")(
        "devices", po::value<std::string>()->default_value("cpu"),
        "what computes: cpu, gpu0, gpu1, … comma-separated (the CPU also takes what a GPU cannot)")(
        "gpu-slice-seconds", po::value<double>()->default_value(0.5),
        "longest single GPU kernel; a GEMM is cut into slices this long")(
        "list-devices", "print the CPU and every OpenCL device, then exit")(
        "list-devices-tsv", "print the OpenCL devices one a line (index, type, name, vendor), then "
                            "exit (the desktop app lists them so, keeping the driver out of its "
                            "own process)")(
        "calibrate", "search CLBlast GEMM parameters for the OpenCL devices, save them, then exit")(
        "calibrate-seconds", po::value<double>()->default_value(60.0),
        "time limit of --calibrate per device and dtype");
    try {
        po::variables_map args;
        po::store(po::parse_command_line(argc, argv, options), args);
        po::notify(args);
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
        const int threads = args["threads"].as<int>();
        const int cpuThreads =
            threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
        const std::int64_t memoryMb = args["memory-mb"].as<std::int64_t>();
        const std::int64_t memoryBytes =
            memoryMb > 0 ? memoryMb << 20 : volunteer::availableMemoryBytes() / 2;
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
                                       : defaultConfigDir();
        volunteer::DeviceSetupOptions deviceOptions;
        deviceOptions.devices = args["devices"].as<std::string>();
        deviceOptions.cpuThreads = threads;
        deviceOptions.memoryBytes = memoryBytes;
        deviceOptions.cacheDir = cacheDir;
        deviceOptions.configDir = configDir;
        deviceOptions.sliceSeconds =
            std::clamp(args["gpu-slice-seconds"].as<double>(), 0.001, 60.0);
        if (args.count("calibrate"))
            return volunteer::calibrateDevices(
                deviceOptions, std::clamp(args["calibrate-seconds"].as<double>(), 1.0, 3600.0),
                logLine);
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
        settings.slots = std::clamp(args["slots"].as<int>(), 1, 16);
        settings.threads = cpuThreads;
        settings.memoryBytes = memoryBytes;
        settings.inputCacheBytes =
            std::max<std::int64_t>(0, args["input-cache-mb"].as<std::int64_t>()) << 20;

        asio::io_context io(1);
        auto devices = volunteer::setUpDevices(deviceOptions, logLine);
        if (!devices)
            throw std::runtime_error(devices.error().message);
        settings.devices = std::move(devices->devices);
        settings.graphDevice = devices->graphDevice;
        auto backend = std::move(devices->backend);
        volunteer::VolunteerEngine engine(io, settings, std::move(backend), logLine);
        asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code& ec, int signal) {
            if (ec)
                return;
            logLine("signal " + std::to_string(signal) + ": stopping");
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
                signals.cancel();
            });
        };
        watchExit();
        logLine("goblin-volunteer " + std::to_string(settings.threads) + " thread(s), lending " +
                std::to_string(settings.memoryBytes >> 20) + " MiB, OpenBLAS kernel " +
                compute::currentBlasKernel() + ", node " + settings.nodeUrl);
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
    } catch (const std::exception& error) {
        std::cerr << "goblin-volunteer: " << error.what() << std::endl;
        return 1;
    }
}
