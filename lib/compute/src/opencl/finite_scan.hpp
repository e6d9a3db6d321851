// Our own kernel (kernels/finite_scan.cl, embedded at build time): counts NaN/±Inf elements of a
// device buffer. Built once per dtype on one context; used by the backend's compute thread only.
#pragma once

#include <cstdint>

#include "cl_headers.hpp"
#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::compute::opencl {

class FiniteScan {
public:
    // Compiles the kernel for dtype (F32 or F64; F64 needs an fp64 device).
    [[nodiscard]] static Expected<FiniteScan> build(const cl::Context& context,
                                                    const cl::Device& device, core::DType dtype);

    // Elements of values[0, count) that are NaN or infinite; waits for the answer.
    [[nodiscard]] Expected<std::uint64_t>
    countNonFinite(cl::CommandQueue& queue, const cl::Buffer& values, std::uint64_t count);

private:
    FiniteScan(cl::Context context, cl::Kernel kernel, std::size_t groupSize, std::size_t maxGroups)
        : m_context(std::move(context)), m_kernel(std::move(kernel)), m_groupSize(groupSize),
          m_maxGroups(maxGroups) {}

    cl::Context m_context;
    cl::Kernel m_kernel;
    std::size_t m_groupSize;
    std::size_t m_maxGroups;
};

} // namespace goblin::compute::opencl
