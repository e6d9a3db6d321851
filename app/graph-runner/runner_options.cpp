#include "runner_options.hpp"

#include <charconv>
#include <map>

namespace goblin::graph_runner {
namespace {

std::optional<Backend> parseBackend(const std::string& text) {
    if (text == "cpu")
        return CpuBackend{};
    const std::string prefix = "opencl:";
    if (text.rfind(prefix, 0) != 0)
        return std::nullopt;
    int index = -1;
    const char* first = text.data() + prefix.size();
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, index);
    if (ec != std::errc{} || end != last || first == last || index < 0)
        return std::nullopt;
    return OpenClBackend{index};
}

} // namespace

std::variant<RunnerOptions, std::string> parseRunnerOptions(const std::vector<std::string>& args) {
    std::map<std::string, std::string> values;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& name = args[i];
        if (name != "--backend" && name != "--graph" && name != "--inputs" && name != "--outputs")
            return "unknown argument '" + name + "'";
        if (i + 1 == args.size())
            return name + " needs a value";
        if (!values.emplace(name, args[++i]).second)
            return name + " given twice";
    }
    for (const char* required : {"--backend", "--graph", "--outputs"})
        if (!values.contains(required))
            return std::string(required) + " is required";
    auto backend = parseBackend(values["--backend"]);
    if (!backend)
        return "--backend wants cpu or opencl:<index>, got '" + values["--backend"] + "'";
    RunnerOptions options{*backend, values["--graph"], std::nullopt, values["--outputs"]};
    if (values.contains("--inputs"))
        options.inputsPath = values["--inputs"];
    return options;
}

} // namespace goblin::graph_runner
