// Launches of the indexing kernels (kernels/indexing.cl): every index tensor is range-checked on
// the device first; a failure reads the indices back to name the first bad one, as the reference
// does.
#include <string>

#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {
namespace {

using core::DType;
using core::ops::OpCode;

std::string indexDefine(DType dtype) {
    return dtype == DType::I32 ? " -DI=int" : " -DI=long";
}

std::size_t dimAttr(const core::ops::Attributes& attrs, std::size_t rank) {
    const std::int64_t dim = core::ops::attrInt(attrs, "dim", 0).value_or(0);
    const auto bound = static_cast<std::int64_t>(rank == 0 ? 1 : rank);
    return static_cast<std::size_t>(dim < 0 ? dim + bound : dim);
}

std::int64_t indexValue(const core::Tensor& index, std::size_t i) {
    return index.dtype() == DType::I32 ? index.values<std::int32_t>()[i]
                                       : index.values<std::int64_t>()[i];
}

// Every index in [0, size), or the reference's error naming the first that is not.
Expected<void> checkIndices(LaunchContext& launch, const DeviceValue& index, std::int64_t size,
                            const char* op) {
    auto kernel = launch.programs.kernel(KernelFamily::Indexing, indexDefine(index.spec.dtype),
                                         "check_indices");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(index.count),
                                  index.buffer, cl_long{size}, launch.errorFlag);
        !done)
        return done;
    auto raised = errorRaised(launch);
    if (!raised)
        return tl::unexpected(raised.error());
    if (!*raised)
        return {};
    auto host = launch.device.download(index);
    if (!host)
        return tl::unexpected(host.error());
    for (std::size_t i = 0; i < static_cast<std::size_t>(host->elementCount()); ++i) {
        const std::int64_t value = indexValue(*host, i);
        if (value < 0 || value >= size)
            return makeError(ErrorCode::InvalidInput,
                             std::string(op) + ": index " + std::to_string(value) +
                                 " is out of range for a dim of size " + std::to_string(size));
    }
    return makeError(ErrorCode::Internal,
                     std::string(op) + ": the device flagged an index the host finds in range");
}

template <class... Rest>
Expected<DeviceValue> runKernel(LaunchContext& launch, const std::string& defines, const char* name,
                                const core::ops::TensorSpec& spec, std::size_t items,
                                const Rest&... rest) {
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(KernelFamily::Indexing, defines, name);
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, items, rest..., out->buffer); !done)
        return tl::unexpected(done.error());
    return out;
}

Expected<DeviceValue> gather(LaunchContext& launch, Args args, const core::ops::Attributes& attrs,
                             const core::ops::TensorSpec& spec) {
    const DeviceValue& x = args[0];
    const DeviceValue& index = args[1];
    const std::size_t dim = dimAttr(attrs, x.spec.shape.size());
    if (auto checked =
            checkIndices(launch, index, x.spec.shape.empty() ? 1 : x.spec.shape[dim], "gather");
        !checked)
        return tl::unexpected(checked.error());
    std::vector<std::int64_t> layout{static_cast<std::int64_t>(index.spec.shape.size())};
    layout.insert(layout.end(), index.spec.shape.begin(), index.spec.shape.end());
    const auto strides = stridesOf(x.spec.shape);
    layout.insert(layout.end(), strides.begin(), strides.end());
    auto table = launch.device.constants(layout);
    if (!table)
        return tl::unexpected(table.error());
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(
        KernelFamily::Indexing, indexDefine(index.spec.dtype) + copyTypeDefine(x.spec.dtype),
        "gather_along");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), x.buffer,
                                  index.buffer, out->buffer, *table, cl_int{static_cast<int>(dim)});
        !done)
        return tl::unexpected(done.error());
    return out;
}

Expected<DeviceValue> selectRows(LaunchContext& launch, const DeviceValue& x,
                                 const DeviceValue& index, std::size_t dim, const char* op,
                                 const core::ops::TensorSpec& spec) {
    const DimSplit split = splitAt(x.spec.shape, dim);
    if (auto checked = checkIndices(launch, index, split.size, op); !checked)
        return tl::unexpected(checked.error());
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(
        KernelFamily::Indexing, indexDefine(index.spec.dtype) + copyTypeDefine(x.spec.dtype),
        "select_rows");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done = enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), x.buffer,
                                  index.buffer, out->buffer, cl_long{index.count},
                                  cl_long{split.size}, cl_long{split.inner});
        !done)
        return tl::unexpected(done.error());
    return out;
}

template <class T>
Expected<DeviceValue> indexAdd(LaunchContext& launch, Args args, std::size_t dim, T alpha,
                               const core::ops::TensorSpec& spec) {
    const DimSplit split = splitAt(args[0].spec.shape, dim);
    auto out = launch.device.allocate(spec);
    if (!out)
        return out;
    auto kernel = launch.programs.kernel(KernelFamily::Indexing,
                                         indexDefine(args[1].spec.dtype) + typeDefines(spec.dtype),
                                         "index_add_rows");
    if (!kernel)
        return tl::unexpected(kernel.error());
    if (auto done =
            enqueueKernel(launch, *kernel, static_cast<std::size_t>(out->count), args[0].buffer,
                          args[1].buffer, args[2].buffer, out->buffer, cl_long{args[1].count},
                          cl_long{split.size}, cl_long{split.inner}, alpha);
        !done)
        return tl::unexpected(done.error());
    return out;
}

Expected<DeviceValue> indexAddOf(LaunchContext& launch, Args args,
                                 const core::ops::Attributes& attrs,
                                 const core::ops::TensorSpec& spec) {
    const core::Shape& shape = args[0].spec.shape;
    const std::size_t dim = dimAttr(attrs, shape.size());
    if (auto checked = checkIndices(launch, args[1], shape.empty() ? 1 : shape[dim], "index_add");
        !checked)
        return tl::unexpected(checked.error());
    const double alpha = core::ops::attrOptionalNumber(attrs, "alpha").value().value_or(1.0);
    switch (spec.dtype) {
    case DType::F32:
        return indexAdd<cl_float>(launch, args, dim, static_cast<cl_float>(alpha), spec);
    case DType::F64:
        return indexAdd<cl_double>(launch, args, dim, alpha, spec);
    case DType::I32:
        return indexAdd<cl_int>(launch, args, dim,
                                static_cast<cl_int>(static_cast<std::int64_t>(alpha)), spec);
    default:
        return indexAdd<cl_long>(launch, args, dim, static_cast<cl_long>(alpha), spec);
    }
}

} // namespace

Expected<DeviceValue> launchIndexOp(LaunchContext& launch, OpCode op, Args args,
                                    const core::ops::Attributes& attrs,
                                    const core::ops::TensorSpec& spec) {
    switch (op) {
    case OpCode::Gather:
        return gather(launch, args, attrs, spec);
    case OpCode::IndexSelect:
        return selectRows(launch, args[0], args[1], dimAttr(attrs, args[0].spec.shape.size()),
                          "index_select", spec);
    case OpCode::Embedding:
        return selectRows(launch, args[0], args[1], 0, "embedding", spec);
    case OpCode::OneHot: {
        const std::int64_t classes = spec.shape.back();
        if (auto checked = checkIndices(launch, args[0], classes, "one_hot"); !checked)
            return tl::unexpected(checked.error());
        return runKernel(launch, indexDefine(args[0].spec.dtype), "one_hot_rows", spec,
                         static_cast<std::size_t>(core::elementCount(spec.shape).value_or(0)),
                         args[0].buffer, cl_long{classes});
    }
    default:
        return indexAddOf(launch, args, attrs, spec);
    }
}

} // namespace goblin::compute::opencl
