// Launches of the shape kernels (kernels/shape.cl): cast, reshape (shares the buffer), permute and
// expand (strided gathers), batched matmul (k summed in order, as the reference).
#include "goblin/reference/index_tables.hpp"
#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

using core::DType;
using core::ops::OpCode;

std::string castDefines(DType from, DType to) {
    std::string defines = typeDefines(from, "FROM", "FROM_S") + typeDefines(to, "TO", "TO_S");
    if (to == DType::Bool)
        return defines + " -DCAST_MODE=1";
    if (core::isFloatingPoint(from) && !core::isFloatingPoint(to)) {
        const char* fromSuffix = from == DType::F32 ? "f32" : "f64";
        const char* toSuffix = to == DType::I32 ? "i32" : "i64";
        return defines + " -DCAST_MODE=2 -DCAST_FN=gm_cast_" + fromSuffix + "_to_" + toSuffix;
    }
    return defines + " -DCAST_MODE=0";
}

const char* elementCopyType(DType dtype) {
    switch (core::itemSize(dtype)) {
    case 1:
        return "uchar";
    case 4:
        return "uint";
    default:
        return "ulong";
    }
}

Expected<DeviceValue> gather(LaunchContext& launch, const DeviceValue& x,
                             const core::ops::TensorSpec& spec,
                             const std::vector<std::int64_t>& layout) {
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto table = launch.device.constants(layout);
    if (!table)
        return tl::unexpected(table.error());
    auto kernel = launch.programs.kernel(
        KernelFamily::Shape, std::string(" -DE=") + elementCopyType(spec.dtype), "gather_strided");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), x.buffer,
                                  out->buffer, *table);
        !done)
        return tl::unexpected(done.error());
    return out;
}

// Output dim d reads input dim dims[d]: the layout holds the input's strides in the new order.
std::vector<std::int64_t> permuteLayout(const core::Shape& in, const core::ops::IntList& dims,
                                        const core::Shape& out) {
    const std::vector<std::int64_t> strides = stridesOf(in);
    std::vector<std::int64_t> layout{static_cast<std::int64_t>(out.size())};
    layout.insert(layout.end(), out.begin(), out.end());
    for (std::int64_t raw : dims)
        layout.push_back(strides[static_cast<std::size_t>(
            raw < 0 ? raw + static_cast<std::int64_t>(in.size()) : raw)]);
    return layout;
}

Expected<DeviceValue> matmul(LaunchContext& launch, const DeviceValue& a, const DeviceValue& b,
                             const core::ops::TensorSpec& spec) {
    const core::Shape& sa = a.spec.shape;
    const core::Shape& sb = b.spec.shape;
    const core::Shape batch(spec.shape.begin(), spec.shape.end() - 2);
    auto batchA = launch.device.constants(
        reference::broadcastOffsets(core::Shape(sa.begin(), sa.end() - 2), batch));
    auto batchB = launch.device.constants(
        reference::broadcastOffsets(core::Shape(sb.begin(), sb.end() - 2), batch));
    if (!batchA || !batchB)
        return tl::unexpected(batchA ? batchB.error() : batchA.error());
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(KernelFamily::Shape, typeDefines(spec.dtype), "matmul");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(
            launch, *kernel, static_cast<std::size_t>(out->count), a.buffer, b.buffer, out->buffer,
            *batchA, *batchB, cl_long{sa[sa.size() - 2]}, cl_long{sa.back()}, cl_long{sb.back()});
        !done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace

Expected<DeviceValue> launchShapeOp(LaunchContext& launch, OpCode op, Args args,
                                    const core::ops::Attributes& attrs,
                                    const core::ops::TensorSpec& spec) {
    const DeviceValue& x = args[0];
    switch (op) {
    case OpCode::Reshape:
        return DeviceValue{spec, x.buffer, x.count};
    case OpCode::Permute:
        return gather(launch, x, spec,
                      permuteLayout(x.spec.shape,
                                    core::ops::attrIntList(attrs, "dims", std::nullopt).value(),
                                    spec.shape));
    case OpCode::Expand: {
        const core::Shape shapes[] = {x.spec.shape};
        return gather(launch, x, spec, broadcastLayout(spec.shape, shapes));
    }
    case OpCode::Matmul:
        return matmul(launch, x, args[1], spec);
    default:
        break;
    }
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(KernelFamily::Shape, castDefines(x.spec.dtype, spec.dtype),
                                         "cast_values");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), x.buffer,
                                  out->buffer);
        !done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace goblin::compute::opencl
