#include "goblin/core/dtype.hpp"

namespace goblin::core {

std::size_t itemSize(DType dtype) {
    switch (dtype) {
    case DType::F32:
    case DType::I32:
        return 4;
    case DType::F64:
    case DType::I64:
        return 8;
    case DType::Bool:
        return 1;
    }
    return 1;
}

std::string_view wireName(DType dtype) {
    switch (dtype) {
    case DType::F32:
        return "f32";
    case DType::F64:
        return "f64";
    case DType::I32:
        return "i32";
    case DType::I64:
        return "i64";
    case DType::Bool:
        return "bool";
    }
    return "f32";
}

std::optional<DType> dtypeFromWireName(std::string_view name) {
    for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
        if (wireName(dtype) == name)
            return dtype;
    }
    return std::nullopt;
}

bool isFloatingPoint(DType dtype) {
    return dtype == DType::F32 || dtype == DType::F64;
}

} // namespace goblin::core
