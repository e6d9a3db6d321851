// Launches of the reduction kernels (kernels/reduce.cl). The host builds the same C-order index
// tables as the CPU reference (reference::reductionIndex), so one work-item per output
// walks its elements in the reference's order.
#include "goblin/reference/index_tables.hpp"
#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

using core::ops::IntList;
using core::ops::OpCode;

IntList normalised(IntList dims, std::size_t rank) {
    for (std::int64_t& dim : dims)
        dim = dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim;
    return dims;
}

// "dims" (default all) for reductions; "dim" (absent: all, flattened) for line ops.
IntList reducedDims(OpCode op, const core::ops::Attributes& attrs, std::size_t rank) {
    IntList all;
    for (std::size_t i = 0; i < rank; ++i)
        all.push_back(static_cast<std::int64_t>(i));
    const bool perLine = op == OpCode::Argmax || op == OpCode::Argmin || op == OpCode::Cumsum ||
                         op == OpCode::Softmax || op == OpCode::LogSoftmax;
    if (!perLine) {
        IntList dims = core::ops::attrIntList(attrs, "dims", IntList{}).value_or(IntList{});
        return dims.empty() ? all : normalised(dims, rank);
    }
    auto dim = core::ops::attrInt(attrs, "dim", std::nullopt);
    if (!dim)
        return all;
    if (rank == 0)
        return {};
    return normalised({*dim}, rank);
}

const char* kernelName(OpCode op) {
    switch (op) {
    case OpCode::Argmax:
    case OpCode::Argmin:
        return "arg_reduce";
    case OpCode::Cumsum:
        return "cumulative_sum";
    case OpCode::Softmax:
    case OpCode::LogSoftmax:
        return "softmax_lines";
    default:
        return "reduce";
    }
}

} // namespace

Expected<DeviceValue> launchReduction(LaunchContext& launch, OpCode op, Args args,
                                      const core::ops::Attributes& attrs,
                                      const core::ops::TensorSpec& spec) {
    const DeviceValue& x = args[0];
    const auto index =
        reference::reductionIndex(x.spec.shape, reducedDims(op, attrs, x.spec.shape.size()));
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto bases = launch.device.constants(index.bases);
    auto members = launch.device.constants(index.members);
    if (!bases || !members)
        return tl::unexpected(bases ? members.error() : bases.error());
    // Accumulator = the output dtype (i64 for sums of i32), except for the arg ops (→ i64 indices).
    const bool argOp = op == OpCode::Argmax || op == OpCode::Argmin;
    const std::string defines =
        typeDefines(x.spec.dtype) + typeDefines(argOp ? x.spec.dtype : spec.dtype, "A", "AS");
    auto kernel = launch.programs.kernel(KernelFamily::Reduce, defines, kernelName(op));
    if (!kernel)
        return tl::unexpected(kernel.error());
    const auto lines = index.bases.size();
    const auto count = static_cast<cl_long>(index.members.size());
    const cl_int code = static_cast<cl_int>(op);
    Expected<void> done;
    if (op == OpCode::Cumsum)
        done =
            enqueueKernel(launch, *kernel, lines, x.buffer, *bases, *members, count, out->buffer);
    else if (argOp || op == OpCode::Softmax || op == OpCode::LogSoftmax)
        done = enqueueKernel(launch, *kernel, lines, x.buffer, *bases, *members, count, out->buffer,
                             code);
    else
        done = enqueueKernel(launch, *kernel, lines, x.buffer, *bases, *members, count, out->buffer,
                             code, cl_long{core::ops::attrInt(attrs, "correction", 1).value_or(1)});
    if (!done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace goblin::compute::opencl
