// Eigen with its large products handed to OpenBLAS (EIGEN_USE_BLAS must come before Eigen's
// headers, so include this first), and the row-major matrix maps our tensors are viewed through.
#pragma once

#define EIGEN_USE_BLAS

#include <Eigen/Core>

namespace goblin::compute {

template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

} // namespace goblin::compute
