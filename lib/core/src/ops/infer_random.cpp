// Dtype and shape inference of dropout_mask: no inputs, everything comes from the attributes.
#include <cmath>
#include <string>

#include "infer.hpp"

namespace goblin::core::ops::detail {

Expected<TensorSpec> inferRandomOp(OpCode, Inputs, const Attributes& attrs) {
    if (auto only = onlyAttributes(attrs, {"shape", "p", "seed", "offset", "dtype"}); !only)
        return failureOf(only);
    auto shape = attrIntList(attrs, "shape", std::nullopt);
    auto p = attrOptionalNumber(attrs, "p");
    auto seed = attrInt(attrs, "seed", std::nullopt);
    auto offset = attrInt(attrs, "offset", 0);
    if (!shape || !p || !seed || !offset)
        return !shape  ? failureOf(shape)
               : !p    ? failureOf(p)
               : !seed ? failureOf(seed)
                       : failureOf(offset);
    if (!*p || !(**p >= 0 && **p < 1))
        return invalid("dropout_mask: p is required and must be in [0, 1)");
    if (*offset < 0)
        return invalid("dropout_mask: offset must be ≥ 0");
    DType dtype = DType::F32;
    if (attrs.count("dtype") != 0) {
        auto named = attrDType(attrs, "dtype");
        if (!named)
            return failureOf(named);
        dtype = *named;
    }
    if (!isFloatingPoint(dtype))
        return makeError(ErrorCode::UnsupportedDtype, "dropout_mask: dtype must be f32 or f64");
    return checkedSpec(dtype, *shape);
}

} // namespace goblin::core::ops::detail
