// CPU backend: Eigen GEMM (with EIGEN_USE_BLAS, so Eigen hands large products to OpenBLAS) on a
// number of threads. Used by one compute thread at a time; the thread count is process-wide.
#pragma once

#include <memory>

#include "goblin/compute/backend.hpp"

namespace goblin::compute {

struct CpuBackendOptions {
    int threads = 0; // 0: all cores
};

class EigenCpuBackend final : public Backend {
public:
    explicit EigenCpuBackend(const CpuBackendOptions& options);
    std::string_view name() const override { return "cpu-eigen"; }
    using Backend::matmul;
    // One call runs to the end: the hooks are not called.
    Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b,
                                  const SliceHooks& hooks) override;
    int threads() const { return m_threads; }

private:
    int m_threads;
};

} // namespace goblin::compute
