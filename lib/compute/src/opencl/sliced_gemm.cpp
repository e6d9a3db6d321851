#include "sliced_gemm.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include <clblast.h>

#include "cl_error.hpp"

namespace goblin::compute::opencl {
namespace {

using Clock = std::chrono::steady_clock;

template <class T>
clblast::StatusCode gemm(cl_command_queue* queue, const cl::Buffer& a, const cl::Buffer& b,
                         cl::Buffer& c, std::size_t k, std::size_t n, const GemmSlice& s,
                         cl_event* event) {
    const auto row0 = static_cast<std::size_t>(s.row0);
    const auto k0 = static_cast<std::size_t>(s.k0);
    return clblast::Gemm<T>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                            clblast::Transpose::kNo, static_cast<std::size_t>(s.rows), n,
                            static_cast<std::size_t>(s.depth), T{1}, a(), row0 * k + k0, k, b(),
                            k0 * n, n, T{1}, c(), row0 * n, n, queue, event);
}

} // namespace

Expected<void> runGemmSlice(cl::CommandQueue& queue, core::DType dtype, const cl::Buffer& a,
                            const cl::Buffer& b, cl::Buffer& c, std::int64_t k, std::int64_t n,
                            const GemmSlice& slice) {
    cl_command_queue rawQueue = queue();
    cl_event event = nullptr;
    const auto status = dtype == core::DType::F32
                            ? gemm<float>(&rawQueue, a, b, c, static_cast<std::size_t>(k),
                                          static_cast<std::size_t>(n), slice, &event)
                            : gemm<double>(&rawQueue, a, b, c, static_cast<std::size_t>(k),
                                           static_cast<std::size_t>(n), slice, &event);
    if (status != clblast::StatusCode::kSuccess)
        return tl::unexpected(clblastError(status, "Gemm"));
    // Wrap the event so it is released however we leave; waiting bounds the kernel to this slice.
    const cl::Event done(event);
    if (const cl_int waited = done.wait(); waited != CL_SUCCESS)
        return tl::unexpected(clError(waited, "waiting for a Gemm slice"));
    return {};
}

Expected<SlicedGemmStats> runSlicedGemm(cl::CommandQueue& queue, core::DType dtype,
                                        const cl::Buffer& a, const cl::Buffer& b, cl::Buffer& c,
                                        std::int64_t m, std::int64_t k, std::int64_t n,
                                        const std::vector<GemmSlice>& slices,
                                        const SliceHooks& hooks) {
    const std::size_t bytes =
        static_cast<std::size_t>(m) * static_cast<std::size_t>(n) * core::itemSize(dtype);
    // Every slice accumulates (beta = 1), so C starts at exact zeros.
    const cl_int filled = dtype == core::DType::F32
                              ? queue.enqueueFillBuffer(c, cl_float{0}, 0, bytes)
                              : queue.enqueueFillBuffer(c, cl_double{0}, 0, bytes);
    if (filled != CL_SUCCESS)
        return tl::unexpected(clError(filled, "clEnqueueFillBuffer(C)"));
    SlicedGemmStats stats;
    // Progress counts A's elements done (row × depth), so the last slice reports exactly 1.
    const double total = static_cast<double>(m) * static_cast<double>(k);
    std::int64_t done = 0;
    for (std::size_t index = 0; index < slices.size(); ++index) {
        const GemmSlice& slice = slices[index];
        const auto started = Clock::now();
        if (auto ran = runGemmSlice(queue, dtype, a, b, c, k, n, slice); !ran)
            return tl::unexpected(ran.error());
        const auto finished = Clock::now();
        const double took = std::chrono::duration<double>(finished - started).count();
        stats.longestSliceSeconds = std::max(stats.longestSliceSeconds, took);
        done += slice.rows * slice.depth;
        if (!hooks.betweenSlices)
            continue;
        const bool goOn = hooks.betweenSlices(took, static_cast<double>(done) / total);
        stats.hookSeconds += std::chrono::duration<double>(Clock::now() - finished).count();
        if (!goOn)
            return makeError(ErrorCode::Internal, "stopped after GEMM slice " +
                                                      std::to_string(index + 1) + " of " +
                                                      std::to_string(slices.size()));
    }
    return stats;
}

} // namespace goblin::compute::opencl
