// goblin-run-graph: runs one graph (JSON wire form) on the CPU reference or an OpenCL device.
// Inputs and outputs are files of concatenated tensor frames. Exit 0 on success; 2 with
// "error: <code>: <message>" on stderr when the graph, its inputs or the run fail; 1 on usage
// errors.
#include <fstream>
#include <iostream>
#include <sstream>

#include "frame_file.hpp"
#include "goblin/compute/opencl_graph_executor.hpp"
#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/ops/op_catalog.hpp"
#include "goblin/reference/graph_executor.hpp"
#include "runner_options.hpp"

using namespace goblin;
using namespace goblin::graph_runner;

namespace {

Expected<std::string> readText(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
        return makeError(ErrorCode::NotFound, "cannot open " + path);
    std::ostringstream text;
    text << file.rdbuf();
    if (text.str().size() > core::graph::kMaxGraphJsonBytes)
        return makeError(ErrorCode::LimitExceeded, path + " is larger than the graph size limit");
    return text.str();
}

Expected<std::vector<core::Tensor>> runOn(const Backend& backend, const core::graph::Graph& graph,
                                          const core::graph::GraphPlan& plan,
                                          std::span<const core::Tensor> inputs) {
    if (std::holds_alternative<CpuBackend>(backend))
        return reference::runGraph(graph, plan, inputs);
    auto executor =
        compute::OpenClGraphExecutor::create(std::get<OpenClBackend>(backend).deviceIndex);
    if (!executor)
        return tl::unexpected(executor.error());
    auto outputs = executor->run(graph, plan, inputs);
    // The op suite reads which ops did not run on the device from this line.
    for (auto op : executor->fellBackOps())
        std::cerr << "note: ran on the CPU reference: " << core::ops::opInfo(op).name << '\n';
    return outputs;
}

Expected<void> runGraphFiles(const RunnerOptions& options) {
    auto text = readText(options.graphPath);
    if (!text)
        return tl::unexpected(text.error());
    auto graph = core::graph::decodeGraph(*text);
    if (!graph)
        return tl::unexpected(graph.error());
    auto plan = core::graph::validateGraph(*graph);
    if (!plan)
        return tl::unexpected(plan.error());
    std::vector<core::Tensor> inputs;
    if (options.inputsPath) {
        auto read = readFrameFile(*options.inputsPath, core::FrameLimits{});
        if (!read)
            return tl::unexpected(read.error());
        inputs = std::move(*read);
    }
    auto outputs = runOn(options.backend, *graph, *plan, inputs);
    if (!outputs)
        return tl::unexpected(outputs.error());
    return writeFrameFile(options.outputsPath, *outputs);
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    auto parsed = parseRunnerOptions(args);
    if (auto* problem = std::get_if<std::string>(&parsed)) {
        std::cerr << "goblin-run-graph: " << *problem << '\n' << kUsage << '\n';
        return 1;
    }
    auto done = runGraphFiles(std::get<RunnerOptions>(parsed));
    if (!done) {
        std::cerr << "error: " << done.error().describe() << '\n';
        return 2;
    }
    return 0;
}
