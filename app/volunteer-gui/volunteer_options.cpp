#include "volunteer_options.hpp"

#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "compute_priority.hpp"

namespace goblin::volunteer {

namespace po = boost::program_options;

po::options_description volunteerOptions() {
    po::options_description options("goblin-volunteer options");
    auto add = options.add_options();
    add("help,h", "show this help");
    add("version", "print the version and exit");
    add("headless", "run without a window");
    add("minimized", "desktop app: start in the tray, window hidden");
    add("node", po::value<std::string>(),
        "lab node address, ws://HOST:PORT or wss://HOST:PORT (TLS)");
    add("ca-file", po::value<std::string>(),
        "PEM file of the CA certificate(s) a wss:// node's certificate must chain to (default: "
        "the system's trust store)");
    add("threads", po::value<int>()->default_value(0),
        "CPU threads to compute with, 0 to the cores here (0: all cores)");
    add("cpu-percent", po::value<int>()->default_value(100),
        "headless: share of CPU time on those threads, 1-100 (computing t seconds, then resting "
        "t·(100-N)/N)");
    add("idle-only", "headless: compute only while nobody uses the machine (X11 idle time, else "
                     "the terminals of logged-in users; see --idle-minutes)");
    add("idle-minutes", po::value<int>()->default_value(5),
        "headless, with --idle-only: minutes without input before computing starts, 1-1440");
    add("priority", po::value<std::string>()->default_value("low"),
        "compute priority: low (nice 19, idle I/O class) or normal");
    add("slots", po::value<int>()->default_value(2), "tasks in flight at once, 1-16");
    add("memory-mb", po::value<std::int64_t>()->default_value(0),
        "memory to lend, MiB, up to the RAM here (0: half of what is available)");
    add("input-cache-mb", po::value<std::int64_t>()->default_value(256),
        "graph inputs (model parameters) kept between tasks, MiB, 0-1048576, at most a quarter "
        "of the memory lent (0: every task brings its inputs)");
    add("config-dir", po::value<std::string>(),
        "where the identity and the desktop app's settings are kept (default: "
        "$XDG_CONFIG_HOME/goblin-volunteer)");
    add("devices", po::value<std::string>()->default_value("cpu"),
        "what computes: cpu, gpu0, gpu1, … comma-separated (the CPU also takes what a GPU cannot)");
    add("gpu-slice-seconds", po::value<double>()->default_value(0.5),
        "longest single GPU kernel, 0.001-60 s; a GEMM is cut into slices this long");
    add("list-devices", "print the CPU and every OpenCL device, then exit");
    add("list-devices-tsv", "print the OpenCL devices one a line (index, type, name, vendor), then "
                            "exit (the desktop app lists them so, keeping the driver out of its "
                            "own process)");
    add("calibrate", "search CLBlast GEMM parameters for the OpenCL devices, save them, then exit");
    add("calibrate-seconds", po::value<double>()->default_value(60.0),
        "time limit of --calibrate per device and dtype, 1-3600 s");
    return options;
}

po::variables_map parseVolunteerArgs(int argc, char** argv,
                                     const po::options_description& options) {
    // "--threads -1" would read "-1" as an option: join a number that follows a long option.
    static const std::regex number(R"(^-[0-9.]+$)");
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) == 0 && arg.find('=') == std::string::npos && i + 1 < argc &&
            std::regex_match(argv[i + 1], number))
            arg += std::string("=") + argv[++i];
        args.push_back(std::move(arg));
    }
    po::variables_map map;
    try {
        po::store(po::command_line_parser(args).options(options).run(), map);
        po::notify(map);
    } catch (const po::error& error) {
        throw UsageError(error.what());
    }
    return map;
}

namespace {

template <typename T>
void requireRange(const po::variables_map& args, const std::string& name, T low, T high,
                  const std::string& meaning) {
    const T value = args[name].as<T>();
    if (value >= low && value <= high && !(std::is_floating_point_v<T> && std::isnan(value)))
        return;
    std::ostringstream text;
    text << "--" << name << " must be " << low << " to " << high;
    if (!meaning.empty())
        text << " (" << meaning << ")";
    text << "; got " << value;
    throw UsageError(text.str());
}

} // namespace

void checkVolunteerArgs(const po::variables_map& args, const HostLimits& host) {
    const int cores = std::max(1, host.hardwareThreads);
    requireRange(args, "threads", 0, cores,
                 "0: every core; this machine has " + std::to_string(cores));
    requireRange(args, "cpu-percent", 1, 100, "share of CPU time");
    requireRange(args, "idle-minutes", 1, 1440, "minutes without input");
    requireRange(args, "slots", 1, 16, "tasks in flight");
    const std::int64_t ram = host.totalMemoryMiB > 0 ? host.totalMemoryMiB : INT64_MAX >> 20;
    requireRange<std::int64_t>(args, "memory-mb", 0, ram, "MiB, 0: half of what is available");
    requireRange<std::int64_t>(args, "input-cache-mb", 0, std::int64_t{1} << 20, "MiB");
    requireRange(args, "gpu-slice-seconds", 0.001, 60.0, "seconds");
    requireRange(args, "calibrate-seconds", 1.0, 3600.0, "seconds");
    if (!parseComputePriority(args["priority"].as<std::string>()))
        throw UsageError("--priority must be low or normal; got " +
                         args["priority"].as<std::string>());
    if (!args["idle-minutes"].defaulted() && !args.count("idle-only"))
        throw UsageError("--idle-minutes needs --idle-only");
}

} // namespace goblin::volunteer
