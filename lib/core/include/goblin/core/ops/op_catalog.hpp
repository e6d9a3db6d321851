// The op catalog: each op's name, arity, attributes, dtype and shape inference, validation and
// tolerance class (docs/ops.md). Pure functions over a constant table; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "goblin/core/error.hpp"
#include "goblin/core/ops/attributes.hpp"
#include "goblin/core/ops/op_code.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::core::ops {

// What a value is before it has elements.
struct TensorSpec {
    DType dtype = DType::F32;
    Shape shape;
    friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

enum class ToleranceClass : std::uint8_t {
    Exact,       // bit for bit (floats: equal values, or both NaN)
    Ulp,         // |Δ| ≤ (ulps + ulpsPerReduced·K)·u·(|ref| + |x| if inputScaled)
    SumBound,    // |Δ| ≤ γ_K·scale, scale = the op applied to |x| (Σ|x|, mean |x|, …)
    MatmulBound, // |Δ| ≤ γ_K·(|A||B|)_ij
};

struct Tolerance {
    ToleranceClass cls = ToleranceClass::Exact;
    double ulps = 0;
    double ulpsPerReduced = 0;
    bool inputScaled = false;
};

// OpInfo::arity of an op taking 1 to kMaxVariadicArgs inputs (concat); graphs may limit it further
// (GraphLimits::maxArgs). Arity 0 ops (dropout_mask) take no inputs.
inline constexpr int kVariadic = -1;
inline constexpr int kMaxVariadicArgs = 8;

struct OpInfo {
    OpCode code = OpCode::Count;
    std::string_view name;
    int arity = 0; // kVariadic: 1 to kMaxVariadicArgs
    Tolerance tolerance;
};

const OpInfo& opInfo(OpCode code);
std::optional<OpCode> opFromName(std::string_view name);

// Dtype and shape of the op's output for these inputs and attributes, or a clear error
// (UnsupportedDtype, ShapeMismatch, InvalidInput for bad attributes, LimitExceeded).
Expected<TensorSpec> inferOutput(OpCode code, std::span<const TensorSpec> inputs,
                                 const Attributes& attrs);

// NumPy broadcasting of two shapes.
Expected<Shape> broadcastShapes(const Shape& a, const Shape& b);

// Unit roundoff of a float dtype (2⁻²⁴ for f32, 2⁻⁵³ for f64); 0 for exact dtypes.
double unitRoundoff(DType dtype);
// Largest allowed |Δ| for one element: `reference` is the reference value, `scale` the class's
// scale
// (|x| for inputScaled Ulp ops, op(|x|) for SumBound, (|A||B|)_ij for MatmulBound), `reduced` K.
double toleranceBound(const Tolerance& tolerance, DType dtype, double reference, double scale,
                      std::int64_t reduced);

} // namespace goblin::core::ops
