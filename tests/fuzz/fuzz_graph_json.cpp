// Fuzz target: decodeGraph must reject or decode any text without crashing; a decoded graph must
// re-encode to a fixed point (encode ∘ decode ∘ encode = encode); a graph that validates and has no
// inputs (constants and dropout_mask only) and small values is run on the reference executor, which
// must answer or fail cleanly (index errors, division by zero) — never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/reference/graph_executor.hpp"

namespace {

constexpr std::size_t kMaxRunBytes = std::size_t{1} << 16; // every value of a graph we run

bool smallEnough(const goblin::core::graph::GraphPlan& plan) {
    std::size_t total = 0;
    for (const auto& [id, spec] : plan.specs)
        total += goblin::core::byteSize(spec.dtype, spec.shape).value_or(kMaxRunBytes + 1);
    return total <= kMaxRunBytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace graph = goblin::core::graph;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    graph::GraphLimits limits;
    limits.maxValueBytes = std::size_t{1} << 24;
    limits.maxConstantBytes = std::size_t{1} << 20;
    auto decoded = graph::decodeGraph(text, limits);
    if (!decoded)
        return 0;
    const std::string encoded = graph::encodeGraph(*decoded);
    auto again = graph::decodeGraph(encoded, limits);
    if (!again || graph::encodeGraph(*again) != encoded)
        std::abort();
    auto plan = graph::validateGraph(*decoded, limits);
    if (!plan || !decoded->inputs.empty() || !smallEnough(*plan))
        return 0;
    auto outputs = goblin::reference::runGraph(*decoded, *plan, {});
    if (outputs && outputs->size() != decoded->outputs.size())
        std::abort();
    return 0;
}
