// goblin-volunteer: the composition root. Today it runs the engine headless (--headless); the
// Qt tray front end arrives with the desktop-app issue and drives the same engine.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/program_options.hpp>

#include "goblin/compute/eigen_cpu_backend.hpp"
#include "host_memory.hpp"
#include "volunteer_engine.hpp"

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

} // namespace

int main(int argc, char** argv) {
    po::options_description options("goblin-volunteer options");
    options.add_options()("help,h", "show this help")("headless", "run without a window")(
        "node", po::value<std::string>(), "lab node address, ws://HOST:PORT")(
        "threads", po::value<int>()->default_value(0), "CPU threads to compute with (0: all cores)")(
        "slots", po::value<int>()->default_value(2), "tasks in flight at once (1-16)")(
        "memory-mb", po::value<std::int64_t>()->default_value(0),
        "memory to lend, MiB (0: half of what is available)")(
        "config-dir", po::value<std::string>(), "where the identity is kept");
    try {
        po::variables_map args;
        po::store(po::parse_command_line(argc, argv, options), args);
        po::notify(args);
        if (args.count("help")) {
            std::cout << "usage: goblin-volunteer --headless --node ws://HOST:PORT [options]\n\n"
                      << options;
            return 0;
        }
        if (!args.count("headless"))
            throw std::runtime_error("the desktop window is not built yet; run with --headless");
        if (!args.count("node"))
            throw std::runtime_error("--node ws://HOST:PORT is required");

        volunteer::EngineSettings settings;
        settings.nodeUrl = args["node"].as<std::string>();
        auto url = net::parseWsUrl(settings.nodeUrl);
        if (!url)
            throw std::runtime_error(url.error().message);
        settings.url = *url;
        settings.configDir = args.count("config-dir") ? fs::path(args["config-dir"].as<std::string>())
                                                      : defaultConfigDir();
        settings.slots = std::clamp(args["slots"].as<int>(), 1, 16);
        const int threads = args["threads"].as<int>();
        settings.threads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
        const std::int64_t memoryMb = args["memory-mb"].as<std::int64_t>();
        settings.memoryBytes = memoryMb > 0 ? memoryMb << 20 : volunteer::availableMemoryBytes() / 2;

        asio::io_context io(1);
        auto backend = std::make_unique<compute::EigenCpuBackend>(compute::CpuBackendOptions{threads});
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
        logLine("goblin-volunteer " + std::to_string(settings.threads) + " thread(s), lending " +
                std::to_string(settings.memoryBytes >> 20) + " MiB, node " + settings.nodeUrl);
        engine.start();
        io.run();
        const auto& counters = engine.counters();
        logLine("stopped: " + std::to_string(counters.computed) + " task(s) computed, " +
                std::to_string(counters.accepted) + " accepted, " + std::to_string(counters.rejected) +
                " rejected");
        return engine.exitState() == volunteer::EngineExit::Refused ? 3 : 0;
    } catch (const std::exception& error) {
        std::cerr << "goblin-volunteer: " << error.what() << std::endl;
        return 1;
    }
}
