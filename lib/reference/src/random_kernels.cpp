// Reference kernel of dropout_mask: element i keeps when the first word of
// Philox4x32-10(key = seed, counter = offset + i) divided by 2³² is ≥ p; kept elements are
// 1/(1 − p) (computed in f64, rounded once to the dtype), the others 0.
#include "kernels.hpp"
#include "philox.h"

namespace goblin::reference::detail {
namespace {

template <class T>
void dropoutMask(std::uint64_t seed, std::uint64_t offset, double p, Tensor& out) {
    const double scale = 1.0 / (1.0 - p);
    const double threshold = p * 4294967296.0; // word/2³² ≥ p  ⇔  word ≥ p·2³² (exact in f64)
    auto values = out.values<T>();
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint32_t word = goblin_philox_dropout_word(seed, offset, i);
        values[i] = static_cast<double>(word) >= threshold ? static_cast<T>(scale) : T(0);
    }
}

} // namespace

Expected<Tensor> runRandomOp(OpCode, Args, const Attributes& attrs, const TensorSpec& spec) {
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    const auto seed =
        static_cast<std::uint64_t>(core::ops::attrInt(attrs, "seed", std::nullopt).value());
    const auto offset = static_cast<std::uint64_t>(core::ops::attrInt(attrs, "offset", 0).value());
    const double p = core::ops::attrOptionalNumber(attrs, "p").value().value_or(0.0);
    if (spec.dtype == core::DType::F64)
        dropoutMask<double>(seed, offset, p, *out);
    else
        dropoutMask<float>(seed, offset, p, *out);
    return out;
}

} // namespace goblin::reference::detail
