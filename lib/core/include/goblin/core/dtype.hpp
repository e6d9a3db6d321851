// Element types of tensors. Plain values; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace goblin::core {

enum class DType : std::uint8_t { F32, F64, I32, I64, Bool };

std::size_t itemSize(DType dtype);
std::string_view wireName(DType dtype);
std::optional<DType> dtypeFromWireName(std::string_view name);
bool isFloatingPoint(DType dtype);

} // namespace goblin::core
