// Op attributes (keepdim, dims, dtype, shape, clamp bounds …): a small name → value map with typed,
// checked getters. Plain values; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"

namespace goblin::core::ops {

using IntList = std::vector<std::int64_t>;
// bool, integer, float, integer list, string (dtype names, gelu "approximate").
using AttrValue = std::variant<bool, std::int64_t, double, IntList, std::string>;
using Attributes = std::map<std::string, AttrValue, std::less<>>;

// Typed getters: a missing attribute gives the fallback (or an error when there is none); a present
// attribute of the wrong type is always an InvalidInput error.
Expected<bool> attrBool(const Attributes& attrs, std::string_view name,
                        std::optional<bool> fallback);
Expected<std::int64_t> attrInt(const Attributes& attrs, std::string_view name,
                               std::optional<std::int64_t> fallback);
// Integers are accepted where a float is asked for.
Expected<std::optional<double>> attrOptionalNumber(const Attributes& attrs, std::string_view name);
Expected<IntList> attrIntList(const Attributes& attrs, std::string_view name,
                              std::optional<IntList> fallback);
Expected<std::string> attrString(const Attributes& attrs, std::string_view name,
                                 std::optional<std::string> fallback);
Expected<DType> attrDType(const Attributes& attrs, std::string_view name);

// Fails when attrs holds a name outside `allowed` (typos must not be silently ignored).
Expected<void> onlyAttributes(const Attributes& attrs,
                              std::initializer_list<std::string_view> allowed);

} // namespace goblin::core::ops
