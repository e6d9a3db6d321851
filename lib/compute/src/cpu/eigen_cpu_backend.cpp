// Eigen hands large products to OpenBLAS only when EIGEN_USE_BLAS is defined before its headers.
#define EIGEN_USE_BLAS

#include "goblin/compute/eigen_cpu_backend.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <thread>

#include <Eigen/Core>

// From OpenBLAS; declared here because cblas.h clashes with Eigen's BLAS declarations.
extern "C" void openblas_set_num_threads(int threads);

namespace goblin::compute {
namespace {

template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int resolveThreads(int requested) {
    if (requested > 0)
        return requested;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string shapeText(const core::Shape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
    return text + "]";
}

Expected<void> validate(const core::Tensor& a, const core::Tensor& b) {
    if (a.shape().size() != 2 || b.shape().size() != 2)
        return makeError(ErrorCode::ShapeMismatch, "matmul needs 2-D tensors, got " +
                                                       shapeText(a.shape()) + " and " +
                                                       shapeText(b.shape()));
    if (a.dtype() != b.dtype())
        return makeError(ErrorCode::UnsupportedDtype,
                         "matmul needs one dtype, got " + std::string(core::wireName(a.dtype())) +
                             " and " + std::string(core::wireName(b.dtype())));
    if (!core::isFloatingPoint(a.dtype()))
        return makeError(ErrorCode::UnsupportedDtype,
                         "matmul takes f32 or f64, not " + std::string(core::wireName(a.dtype())));
    if (a.shape()[1] != b.shape()[0])
        return makeError(ErrorCode::ShapeMismatch,
                         "matmul inner sizes differ: " + shapeText(a.shape()) + " · " +
                             shapeText(b.shape()));
    // BLAS takes 32-bit dimensions.
    const bool fitsBlas = std::all_of(a.shape().begin(), a.shape().end(),
                                      [](std::int64_t dim) { return dim <= INT_MAX; }) &&
                          b.shape()[1] <= INT_MAX;
    if (!fitsBlas)
        return makeError(ErrorCode::LimitExceeded, "matmul dimensions over 2^31 - 1");
    return {};
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

Expected<core::Tensor> EigenCpuBackend::matmul(const core::Tensor& a, const core::Tensor& b) {
    if (auto valid = validate(a, b); !valid)
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
