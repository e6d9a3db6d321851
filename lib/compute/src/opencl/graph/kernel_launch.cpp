#include "opencl/graph/kernel_launch.hpp"

namespace goblin::compute::opencl {

Expected<void> clearErrorFlag(LaunchContext& launch) {
    const cl_int zero = 0;
    const cl_int status =
        launch.device.queue.enqueueWriteBuffer(launch.errorFlag, CL_TRUE, 0, sizeof zero, &zero);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueWriteBuffer(error flag)"));
    return {};
}

Expected<bool> errorRaised(LaunchContext& launch) {
    cl_int flag = 0;
    const cl_int status =
        launch.device.queue.enqueueReadBuffer(launch.errorFlag, CL_TRUE, 0, sizeof flag, &flag);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clEnqueueReadBuffer(error flag)"));
    return flag != 0;
}

std::vector<std::int64_t> stridesOf(const core::Shape& shape) {
    std::vector<std::int64_t> strides(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;)
        strides[i - 1] = strides[i] * shape[i];
    return strides;
}

DimSplit splitAt(const core::Shape& shape, std::size_t dim) {
    DimSplit split;
    if (shape.empty())
        return split;
    for (std::size_t d = 0; d < shape.size(); ++d)
        (d < dim ? split.outer : d == dim ? split.size : split.inner) *= shape[d];
    return split;
}

std::string copyTypeDefine(core::DType dtype) {
    switch (core::itemSize(dtype)) {
    case 1:
        return " -DE=uchar";
    case 4:
        return " -DE=uint";
    default:
        return " -DE=ulong";
    }
}

std::vector<std::int64_t> broadcastLayout(const core::Shape& out,
                                          std::span<const core::Shape> inputs) {
    std::vector<std::int64_t> layout{static_cast<std::int64_t>(out.size())};
    layout.insert(layout.end(), out.begin(), out.end());
    for (const core::Shape& in : inputs) {
        const std::vector<std::int64_t> inStrides = stridesOf(in);
        std::vector<std::int64_t> strides(out.size(), 0);
        const std::size_t offset = out.size() - in.size();
        for (std::size_t i = 0; i < in.size(); ++i)
            strides[offset + i] = in[i] == 1 ? 0 : inStrides[i];
        layout.insert(layout.end(), strides.begin(), strides.end());
    }
    return layout;
}

} // namespace goblin::compute::opencl
