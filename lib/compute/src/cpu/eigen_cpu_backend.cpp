// First: Eigen must see EIGEN_USE_BLAS before any of its headers.
#include "eigen_blas.hpp"

#include "goblin/compute/eigen_cpu_backend.hpp"

#include <algorithm>
#include <thread>

#include "matmul_validation.hpp"

// From OpenBLAS; declared here because cblas.h clashes with Eigen's BLAS declarations.
extern "C" void openblas_set_num_threads(int threads);

namespace goblin::compute {
namespace {

int resolveThreads(int requested) {
    if (requested > 0)
        return requested;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

template <class T> void multiply(const core::Tensor& a, const core::Tensor& b, core::Tensor& c) {
    const Eigen::Index m = a.shape()[0];
    const Eigen::Index k = a.shape()[1];
    const Eigen::Index n = b.shape()[1];
    Eigen::Map<RowMajorMatrix<T>> out(c.values<T>().data(), m, n);
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        out.setZero();
        return;
    }
    const Eigen::Map<const RowMajorMatrix<T>> lhs(a.values<T>().data(), m, k);
    const Eigen::Map<const RowMajorMatrix<T>> rhs(b.values<T>().data(), k, n);
    out.noalias() = lhs * rhs;
}

} // namespace

EigenCpuBackend::EigenCpuBackend(const CpuBackendOptions& options)
    : m_threads(resolveThreads(options.threads)) {
    openblas_set_num_threads(m_threads);
    Eigen::setNbThreads(m_threads);
}

Expected<core::Tensor> EigenCpuBackend::matmul(const core::Tensor& a, const core::Tensor& b,
                                               const SliceHooks& /*hooks*/) {
    if (auto valid = validateMatmul(a, b); !valid)
        return tl::unexpected(valid.error());
    auto c = core::Tensor::allocate(a.dtype(), {a.shape()[0], b.shape()[1]});
    if (!c)
        return c;
    if (a.dtype() == core::DType::F32)
        multiply<float>(a, b, *c);
    else
        multiply<double>(a, b, *c);
    return c;
}

} // namespace goblin::compute
