#include "goblin/plan/tensor_sums.hpp"

namespace goblin::plan {
namespace {

template <typename T>
void accumulate(std::vector<double>& sum, const core::Tensor& part, double weight) {
    auto values = part.values<T>();
    for (std::size_t i = 0; i < sum.size(); ++i)
        sum[i] += weight * static_cast<double>(values[i]);
}

template <typename T> void store(core::Tensor& out, const std::vector<double>& sum) {
    auto values = out.values<T>();
    for (std::size_t i = 0; i < sum.size(); ++i)
        values[i] = static_cast<T>(sum[i]);
}

} // namespace

Expected<core::Tensor> weightedSum(const std::vector<core::Tensor>& parts,
                                   const std::vector<double>& weights) {
    if (parts.empty() || parts.size() != weights.size())
        return makeError(ErrorCode::Internal, "a weighted sum needs one weight per part");
    const core::Tensor& first = parts.front();
    if (first.dtype() != core::DType::F32 && first.dtype() != core::DType::F64)
        return makeError(ErrorCode::UnsupportedDtype, "only float tensors are summed");
    for (const core::Tensor& part : parts)
        if (part.dtype() != first.dtype() || part.shape() != first.shape())
            return makeError(ErrorCode::ShapeMismatch,
                             "the chunks' outputs to sum differ in dtype or shape");
    std::vector<double> sum(static_cast<std::size_t>(first.elementCount()), 0.0);
    for (std::size_t c = 0; c < parts.size(); ++c) {
        if (first.dtype() == core::DType::F32)
            accumulate<float>(sum, parts[c], weights[c]);
        else
            accumulate<double>(sum, parts[c], weights[c]);
    }
    auto out = core::Tensor::allocate(first.dtype(), first.shape());
    if (!out)
        return tl::unexpected(out.error());
    if (first.dtype() == core::DType::F32)
        store<float>(*out, sum);
    else
        store<double>(*out, sum);
    return out;
}

} // namespace goblin::plan
