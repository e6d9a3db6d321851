#include "goblin/plan/chunk_shapes.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "goblin/core/ops/op_catalog.hpp"

namespace goblin::plan {
namespace {

using core::graph::ValueId;
using core::ops::OpCode;
using core::ops::TensorSpec;

std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t end) {
    std::int64_t count = 1;
    for (std::size_t d = 0; d < end; ++d)
        count *= dims[d];
    return count;
}

// The dims where a value's chunk shape differs from its whole shape: where its rows are.
std::vector<std::size_t> batchDims(const core::Shape& whole, const core::Shape& chunk) {
    std::vector<std::size_t> dims;
    if (whole.size() != chunk.size())
        return dims;
    for (std::size_t d = 0; d < whole.size(); ++d)
        if (whole[d] != chunk[d])
            dims.push_back(d);
    return dims;
}

// Where a value's rows are: dim `dim`, whose whole size is outer · B · inner with the batch
// index between the two (row-major). An input's marked dim is {d, 1, 1}; a reshape that merges
// dims into it or splits it moves the factors.
struct RowsAt {
    std::size_t dim = 0;
    std::int64_t outer = 1, inner = 1;
};

// A target dim the op infers (reshape's −1) or that is 0: such a target is kept when it fits.
bool hasFreeDim(const core::ops::IntList& target) {
    return std::any_of(target.begin(), target.end(), [](std::int64_t dim) { return dim <= 0; });
}

// The dim of a reshape target (whole sizes) that holds the input's rows, and where they sit in
// it: the target dim spans the input's rows dim (merging dims into it) or lies within it, and
// holds all B rows of it. nullopt when none does.
std::optional<RowsAt> reshapedRows(const core::ops::IntList& target, const core::Shape& whole,
                                   const RowsAt& rows, std::int64_t batch) {
    const std::int64_t start = product(whole, rows.dim), end = start * whole[rows.dim];
    for (std::size_t i = 0; i < target.size(); ++i) {
        const std::int64_t from = product(target, i), to = from * target[i];
        if (start % from == 0 && to % end == 0) // spans the rows dim
            return RowsAt{i, start / from * rows.outer, rows.inner * (to / end)};
        if (from % start != 0 || end % to != 0)
            continue;
        const std::int64_t before = from / start, through = to / start; // within the rows dim
        if (rows.outer % before == 0 && through % (rows.outer * batch) == 0)
            return RowsAt{i, rows.outer / before, through / (rows.outer * batch)};
    }
    return std::nullopt;
}

class ShapeAdapter {
public:
    ShapeAdapter(const core::graph::GraphPlan& whole, std::int64_t fullBatch, std::int64_t rows)
        : m_whole(whole), m_fullBatch(fullBatch), m_rows(rows) {}

    void addValue(ValueId id, const TensorSpec& spec) {
        m_specs[id] = spec;
        const auto dims = batchDims(m_whole.specs.at(id).shape, spec.shape);
        if (dims.size() == 1)
            m_rowsAt[id] = RowsAt{dims[0], 1, 1};
    }

    Expected<void> addNode(core::graph::GraphNode& node) {
        std::vector<TensorSpec> args;
        for (auto id : node.args)
            args.push_back(m_specs.at(id));
        const bool target = node.op == OpCode::Reshape || node.op == OpCode::Expand;
        const auto shape = core::ops::attrIntList(node.attrs, "shape", std::nullopt);
        const core::Shape& wholeInput = m_whole.specs.at(node.args.at(0)).shape;
        const bool carriesRows = target && m_fullBatch != m_rows && shape && !hasFreeDim(*shape) &&
                                 !batchDims(wholeInput, args[0].shape).empty();
        std::optional<RowsAt> rowsOut;
        auto out = core::ops::inferOutput(node.op, args, node.attrs);
        // A target whose input carries rows is always adapted (its unchanged target may fit by
        // accident); one whose input does not is adapted only when it no longer fits.
        if (carriesRows && m_rowsAt.contains(node.args[0]))
            out = followRows(node, args, *shape, rowsOut);
        else if (carriesRows || (target && m_fullBatch != m_rows && !out))
            out = bySize(node, args);
        if (!out)
            return tl::unexpected(out.error());
        m_specs[node.id] = *out;
        if (!rowsOut) // other ops keep their first rows-carrying argument's rows
            for (ValueId arg : node.args)
                if (const auto found = m_rowsAt.find(arg); found != m_rowsAt.end()) {
                    const auto dims = batchDims(m_whole.specs.at(node.id).shape, out->shape);
                    if (dims.size() == 1)
                        rowsOut = RowsAt{dims[0], found->second.outer, found->second.inner};
                    break;
                }
        if (rowsOut)
            m_rowsAt[node.id] = *rowsOut;
        return {};
    }

private:
    core::ops::IntList scaled(core::ops::IntList target, std::size_t i) const {
        target[i] = target[i] / m_fullBatch * m_rows;
        return target;
    }

    static std::string nameOf(const core::graph::GraphNode& node) {
        return "node " + std::to_string(node.id);
    }

    // The target dim that holds the input's rows, scaled.
    Expected<TensorSpec> followRows(core::graph::GraphNode& node,
                                    const std::vector<TensorSpec>& args,
                                    const core::ops::IntList& target,
                                    std::optional<RowsAt>& rowsOut) const {
        const RowsAt& rows = m_rowsAt.at(node.args[0]);
        const core::Shape& wholeInput = m_whole.specs.at(node.args[0]).shape;
        if (node.op == OpCode::Reshape) {
            rowsOut = reshapedRows(target, wholeInput, rows, m_fullBatch);
        } else { // expand: dims align from the right
            const std::size_t i = rows.dim + target.size() - wholeInput.size();
            if (i < target.size() && target[i] == wholeInput[rows.dim])
                rowsOut = RowsAt{i, rows.outer, rows.inner};
        }
        if (!rowsOut)
            return makeError(ErrorCode::ShapeMismatch,
                             nameOf(node) + ": no dim of its shape target holds the batch rows");
        core::ops::Attributes attrs = node.attrs;
        attrs["shape"] = scaled(target, rowsOut->dim);
        auto out = core::ops::inferOutput(node.op, args, attrs);
        if (out)
            node.attrs = std::move(attrs);
        return out;
    }

    // A target whose input's rows are not known: its dims equal to the batch, then its multiples
    // of it; within a tier exactly one may fit (several: refused, never guessed).
    Expected<TensorSpec> bySize(core::graph::GraphNode& node,
                                const std::vector<TensorSpec>& args) const {
        auto target = core::ops::attrIntList(node.attrs, "shape", std::nullopt);
        if (!target || target->empty() || hasFreeDim(*target))
            return makeError(ErrorCode::ShapeMismatch,
                             nameOf(node) +
                                 ": its shape target cannot be adapted to a chunk of the batch");
        for (bool exact : {true, false}) {
            std::optional<TensorSpec> fitted;
            core::ops::Attributes chosen;
            for (std::size_t i = 0; i < target->size(); ++i) {
                const std::int64_t dim = (*target)[i];
                if (exact ? dim != m_fullBatch : dim % m_fullBatch != 0)
                    continue;
                core::ops::Attributes attrs = node.attrs;
                attrs["shape"] = scaled(*target, i);
                auto out = core::ops::inferOutput(node.op, args, attrs);
                if (!out)
                    continue;
                if (fitted)
                    return makeError(ErrorCode::ShapeMismatch,
                                     nameOf(node) +
                                         ": its shape target has several dims the batch may be "
                                         "(the batch size equals another dim); use another "
                                         "batch size or micro_batch");
                fitted = std::move(*out);
                chosen = std::move(attrs);
            }
            if (fitted) {
                node.attrs = std::move(chosen);
                return *fitted;
            }
        }
        return makeError(ErrorCode::ShapeMismatch,
                         nameOf(node) +
                             ": its shape target cannot be adapted to a chunk of the batch");
    }

    const core::graph::GraphPlan& m_whole;
    std::int64_t m_fullBatch, m_rows;
    std::map<ValueId, TensorSpec> m_specs;
    std::map<ValueId, RowsAt> m_rowsAt;
};

} // namespace

Expected<void> adaptShapeTargets(core::graph::Graph& graph, const core::graph::GraphPlan& whole,
                                 std::int64_t fullBatch, std::int64_t rows) {
    ShapeAdapter adapter(whole, fullBatch, rows);
    for (const auto& input : graph.inputs)
        adapter.addValue(input.id, input.spec);
    for (const auto& constant : graph.constants)
        adapter.addValue(constant.id, {constant.value.dtype(), constant.value.shape()});
    for (std::size_t index : whole.order)
        if (auto ok = adapter.addNode(graph.nodes[index]); !ok)
            return ok;
    return {};
}

} // namespace goblin::plan
