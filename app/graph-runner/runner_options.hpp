// The command line of goblin-run-graph. Plain values; any thread.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace goblin::graph_runner {

struct CpuBackend {};
struct OpenClBackend {
    int deviceIndex = 0; // listOpenClDevices() index
};
using Backend = std::variant<CpuBackend, OpenClBackend>;

struct RunnerOptions {
    Backend backend;
    std::string graphPath;
    std::optional<std::string> inputsPath; // absent: the graph takes no inputs
    std::string outputsPath;
};

inline constexpr const char* kUsage =
    "usage: goblin-run-graph --backend cpu|opencl:<index> --graph g.json [--inputs in.bin] "
    "--outputs out.bin";

// The options, or the reason the command line is unusable (the caller prints it and the usage).
std::variant<RunnerOptions, std::string> parseRunnerOptions(const std::vector<std::string>& args);

} // namespace goblin::graph_runner
