// Launches of the layout kernels (kernels/layout.cl): concat, slice, constant pad, dropout_mask.
#include <cmath>
#include <limits>

#include "goblin/core/ops/op_geometry.hpp"
#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

using core::DType;
using core::ops::OpCode;

std::size_t dimAttr(const core::ops::Attributes& attrs, std::size_t rank) {
    const std::int64_t dim = core::ops::attrInt(attrs, "dim", 0).value_or(0);
    return static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim);
}

Expected<DeviceValue> concat(LaunchContext& launch, Args args, const core::ops::Attributes& attrs,
                             const core::ops::TensorSpec& spec) {
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel =
        launch.programs.kernel(KernelFamily::Layout, copyTypeDefine(spec.dtype), "copy_blocks");
    if (!kernel)
        return tl::unexpected(kernel.error());
    const std::size_t dim = dimAttr(attrs, spec.shape.size());
    const DimSplit whole = splitAt(spec.shape, dim);
    std::int64_t offset = 0;
    for (const DeviceValue& input : args) {
        const DimSplit part = splitAt(input.spec.shape, dim);
        const std::int64_t block = part.size * part.inner;
        if (block > 0) {
            if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(input.count),
                                          input.buffer, out->buffer, cl_long{block},
                                          cl_long{whole.size * whole.inner}, cl_long{offset});
                !done)
                return tl::unexpected(done.error());
        }
        offset += block;
    }
    return out;
}

Expected<DeviceValue> slice(LaunchContext& launch, const DeviceValue& x,
                            const core::ops::Attributes& attrs, const core::ops::TensorSpec& spec) {
    const std::size_t dim = dimAttr(attrs, x.spec.shape.size());
    const DimSplit split = splitAt(x.spec.shape, dim);
    const std::int64_t step = core::ops::attrInt(attrs, "step", 1).value();
    const auto range = core::ops::sliceRange(
        split.size, core::ops::attrInt(attrs, "start", 0).value(),
        core::ops::attrInt(attrs, "end", std::numeric_limits<std::int64_t>::max()).value(), step);
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel =
        launch.programs.kernel(KernelFamily::Layout, copyTypeDefine(spec.dtype), "slice_rows");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), x.buffer,
                                  out->buffer, cl_long{range.length}, cl_long{split.size},
                                  cl_long{split.inner}, cl_long{range.start}, cl_long{step});
        !done)
        return tl::unexpected(done.error());
    return out;
}

// The fill value converted as the reference converts it.
template <class T> T padValue(DType dtype, double value) {
    if (dtype == DType::Bool)
        return static_cast<T>(value != 0 ? 1 : 0);
    if (!core::isFloatingPoint(dtype))
        return static_cast<T>(static_cast<std::int64_t>(value));
    return static_cast<T>(value);
}

template <class T>
Expected<DeviceValue> pad(LaunchContext& launch, const DeviceValue& x,
                          const core::ops::Attributes& attrs, const core::ops::TensorSpec& spec) {
    const core::Shape& shape = x.spec.shape;
    const std::size_t rank = shape.size();
    const core::ops::IntList pads = core::ops::attrIntList(attrs, "pads", std::nullopt).value();
    std::vector<std::int64_t> before(rank, 0);
    for (std::size_t i = 0; i < pads.size() / 2; ++i)
        before[rank - 1 - i] = pads[2 * i];
    std::vector<std::int64_t> layout{static_cast<std::int64_t>(rank)};
    layout.insert(layout.end(), spec.shape.begin(), spec.shape.end());
    layout.insert(layout.end(), shape.begin(), shape.end());
    layout.insert(layout.end(), before.begin(), before.end());
    auto table = launch.device.constants(layout);
    if (!table)
        return tl::unexpected(table.error());
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel =
        launch.programs.kernel(KernelFamily::Layout, typeDefines(spec.dtype), "pad_constant");
    if (!kernel)
        return tl::unexpected(kernel.error());
    const double value = core::ops::attrOptionalNumber(attrs, "value").value().value_or(0.0);
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), x.buffer,
                                  out->buffer, *table, padValue<T>(spec.dtype, value));
        !done)
        return tl::unexpected(done.error());
    return out;
}

Expected<DeviceValue> padOf(LaunchContext& launch, const DeviceValue& x,
                            const core::ops::Attributes& attrs, const core::ops::TensorSpec& spec) {
    switch (spec.dtype) {
    case DType::F32:
        return pad<cl_float>(launch, x, attrs, spec);
    case DType::F64:
        return pad<cl_double>(launch, x, attrs, spec);
    case DType::I32:
        return pad<cl_int>(launch, x, attrs, spec);
    case DType::I64:
        return pad<cl_long>(launch, x, attrs, spec);
    case DType::Bool:
        break;
    }
    return pad<cl_uchar>(launch, x, attrs, spec);
}

// Keeps when word ≥ p·2³² ⇔ word ≥ ⌈p·2³²⌉ (word is an integer; p·2³² is exact in f64).
template <class T>
Expected<DeviceValue> dropoutMask(LaunchContext& launch, const core::ops::Attributes& attrs,
                                  const core::ops::TensorSpec& spec) {
    const auto seed =
        static_cast<std::uint64_t>(core::ops::attrInt(attrs, "seed", std::nullopt).value());
    const auto offset = static_cast<std::uint64_t>(core::ops::attrInt(attrs, "offset", 0).value());
    const double p = core::ops::attrOptionalNumber(attrs, "p").value().value_or(0.0);
    const auto threshold = static_cast<cl_ulong>(std::ceil(p * 4294967296.0));
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(KernelFamily::Layout, typeDefines(spec.dtype),
                                         "dropout_mask_values");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count),
                                  out->buffer, cl_ulong{seed}, cl_ulong{offset}, threshold,
                                  static_cast<T>(1.0 / (1.0 - p)));
        !done)
        return tl::unexpected(done.error());
    return out;
}

} // namespace

Expected<DeviceValue> launchLayoutOp(LaunchContext& launch, OpCode op, Args args,
                                     const core::ops::Attributes& attrs,
                                     const core::ops::TensorSpec& spec) {
    switch (op) {
    case OpCode::Concat:
        return concat(launch, args, attrs, spec);
    case OpCode::Slice:
        return slice(launch, args[0], attrs, spec);
    case OpCode::Pad:
        return padOf(launch, args[0], attrs, spec);
    default:
        return spec.dtype == DType::F64 ? dropoutMask<cl_double>(launch, attrs, spec)
                                        : dropoutMask<cl_float>(launch, attrs, spec);
    }
}

} // namespace goblin::compute::opencl
