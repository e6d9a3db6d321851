// First: Eigen must see EIGEN_USE_BLAS before any of its headers.
#include "eigen_blas.hpp"

#include "goblin/compute/blas_matmul.hpp"

#include "goblin/core/ops/op_catalog.hpp"

namespace goblin::compute {
namespace {

template <class T>
void multiplyBatches(const core::Tensor& a, const core::Tensor& b, core::Tensor& c) {
    const core::Shape& out = c.shape();
    const Eigen::Index m = out[out.size() - 2], n = out.back(), k = a.shape().back();
    const std::int64_t matrices = core::batchMatrixCount(out);
    T* values = c.values<T>().data();
    for (std::int64_t t = 0; t < matrices; ++t) {
        Eigen::Map<RowMajorMatrix<T>> product(values + t * m * n, m, n);
        if (k == 0) {
            product.setZero();
            continue;
        }
        const core::MatrixView av =
            core::batchMatrix(a, core::broadcastMatrixIndex(a.shape(), out, t));
        const core::MatrixView bv =
            core::batchMatrix(b, core::broadcastMatrixIndex(b.shape(), out, t));
        const Eigen::Map<const RowMajorMatrix<T>> lhs(av.row<T>(0), m, k);
        const Eigen::Map<const RowMajorMatrix<T>> rhs(bv.row<T>(0), k, n);
        product.noalias() = lhs * rhs;
    }
}

} // namespace

Expected<core::Tensor> blasMatmul(const core::Tensor& a, const core::Tensor& b) {
    auto spec = core::ops::inferOutput(
        core::ops::OpCode::Matmul,
        std::vector<core::ops::TensorSpec>{{a.dtype(), a.shape()}, {b.dtype(), b.shape()}}, {});
    if (!spec)
        return tl::unexpected(spec.error());
    if (spec->dtype != core::DType::F32 && spec->dtype != core::DType::F64)
        return makeError(ErrorCode::UnsupportedDtype, "a BLAS matmul is f32 or f64");
    auto c = core::Tensor::allocate(spec->dtype, spec->shape);
    if (!c || c->elementCount() == 0)
        return c;
    if (spec->dtype == core::DType::F32)
        multiplyBatches<float>(a, b, *c);
    else
        multiplyBatches<double>(a, b, *c);
    return c;
}

} // namespace goblin::compute
