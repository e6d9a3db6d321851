// Private: checked readers over Boost.JSON values for the graph and tensor decoders. Any thread.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::core::graph::detail {

inline tl::unexpected<Error> malformed(const std::string& what) {
    return makeError(ErrorCode::InvalidMessage, what);
}

inline Expected<const boost::json::value*> field(const boost::json::object& object,
                                                 std::string_view key) {
    const boost::json::value* value = object.if_contains(key);
    if (value == nullptr)
        return malformed("missing key '" + std::string(key) + "'");
    return value;
}

inline Expected<std::int64_t> asInt(const boost::json::value& value, std::string_view what) {
    if (value.is_int64())
        return value.get_int64();
    if (value.is_uint64() && value.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(value.get_uint64());
    return malformed(std::string(what) + " must be an integer");
}

inline Expected<std::vector<std::int64_t>> asIntList(const boost::json::value& value,
                                                     std::string_view what, std::size_t maxLength) {
    const boost::json::array* array = value.if_array();
    if (array == nullptr)
        return malformed(std::string(what) + " must be a list of integers");
    if (array->size() > maxLength)
        return makeError(ErrorCode::LimitExceeded, std::string(what) + " is too long");
    std::vector<std::int64_t> out;
    for (const boost::json::value& item : *array) {
        auto number = asInt(item, what);
        if (!number)
            return tl::unexpected(number.error());
        out.push_back(*number);
    }
    return out;
}

inline Expected<const boost::json::array*> asArray(const boost::json::value& value,
                                                   std::string_view what, std::size_t maxLength) {
    const boost::json::array* array = value.if_array();
    if (array == nullptr)
        return malformed(std::string(what) + " must be a list");
    if (array->size() > maxLength)
        return makeError(ErrorCode::LimitExceeded, std::string(what) + " has too many entries");
    return array;
}

// Inline tensors ({"dtype", "shape", "values"}), in tensor_json.cpp.
Expected<Tensor> decodeTensorObject(const boost::json::object& object, std::size_t maxBytes);
boost::json::object encodeTensorObject(const Tensor& tensor);

} // namespace goblin::core::graph::detail
