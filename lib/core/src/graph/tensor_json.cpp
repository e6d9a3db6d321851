// decodeTensorJson / encodeTensorJson: small tensors written inline as JSON (graph constants, test
// vectors).
#include <boost/json.hpp>

#include <cmath>
#include <limits>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/precise_json.hpp"
#include "json_reading.hpp"

namespace goblin::core::graph {
namespace {

namespace json = boost::json;
using detail::malformed;

Expected<double> asFloat(const json::value& value) {
    if (value.is_double())
        return value.get_double();
    if (value.is_int64())
        return static_cast<double>(value.get_int64());
    if (value.is_uint64())
        return static_cast<double>(value.get_uint64());
    if (value.is_string()) {
        const json::string& text = value.get_string();
        if (text == "nan")
            return std::numeric_limits<double>::quiet_NaN();
        if (text == "inf")
            return std::numeric_limits<double>::infinity();
        if (text == "-inf")
            return -std::numeric_limits<double>::infinity();
    }
    return malformed("a float value must be a number, \"nan\", \"inf\" or \"-inf\"");
}

template <class T> Expected<void> fill(Tensor& tensor, const json::array& values) {
    auto out = tensor.values<T>();
    for (std::size_t i = 0; i < values.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
            auto number = asFloat(values[i]);
            if (!number)
                return tl::unexpected(number.error());
            out[i] = static_cast<T>(*number);
        } else if constexpr (std::is_same_v<T, bool>) {
            if (!values[i].is_bool())
                return malformed("a bool value must be true or false");
            out[i] = values[i].get_bool();
        } else {
            auto number = detail::asInt(values[i], "an integer value");
            if (!number)
                return tl::unexpected(number.error());
            if (*number < std::numeric_limits<T>::min() || *number > std::numeric_limits<T>::max())
                return malformed("an integer value is out of range for its dtype");
            out[i] = static_cast<T>(*number);
        }
    }
    return {};
}

template <class T> json::value encodeValue(T value) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(value))
            return "nan";
        if (std::isinf(value))
            return value > 0 ? "inf" : "-inf";
        return static_cast<double>(value);
    } else if constexpr (std::is_same_v<T, bool>) {
        return value;
    } else {
        return static_cast<std::int64_t>(value);
    }
}

template <class T> json::array encodeValues(const Tensor& tensor) {
    json::array out;
    for (T value : tensor.values<T>())
        out.push_back(encodeValue(value));
    return out;
}

} // namespace

Expected<Tensor> detail::decodeTensorObject(const json::object& object, std::size_t maxBytes) {
    auto dtypeField = field(object, "dtype");
    auto shapeField = field(object, "shape");
    auto valuesField = field(object, "values");
    if (!dtypeField || !shapeField || !valuesField)
        return malformed("a tensor needs dtype, shape and values");
    const json::string* name = (*dtypeField)->if_string();
    auto dtype = name ? dtypeFromWireName(std::string_view(*name)) : std::nullopt;
    if (!dtype)
        return makeError(ErrorCode::UnsupportedDtype, "unknown tensor dtype");
    auto shape = asIntList(**shapeField, "shape", kMaxRank);
    if (!shape)
        return tl::unexpected(shape.error());
    auto bytes = byteSize(*dtype, *shape);
    if (!bytes)
        return tl::unexpected(bytes.error());
    if (*bytes > maxBytes)
        return makeError(ErrorCode::LimitExceeded, "inline tensor is over the size limit");
    const json::array* values = (*valuesField)->if_array();
    if (values == nullptr || values->size() != *bytes / itemSize(*dtype))
        return malformed("tensor values must be a list of product(shape) entries");
    auto tensor = Tensor::allocate(*dtype, *shape);
    if (!tensor)
        return tensor;
    Expected<void> filled;
    switch (*dtype) {
    case DType::F32:
        filled = fill<float>(*tensor, *values);
        break;
    case DType::F64:
        filled = fill<double>(*tensor, *values);
        break;
    case DType::I32:
        filled = fill<std::int32_t>(*tensor, *values);
        break;
    case DType::I64:
        filled = fill<std::int64_t>(*tensor, *values);
        break;
    case DType::Bool:
        filled = fill<bool>(*tensor, *values);
        break;
    }
    if (!filled)
        return tl::unexpected(filled.error());
    return tensor;
}

json::object detail::encodeTensorObject(const Tensor& tensor) {
    json::object out;
    out["dtype"] = wireName(tensor.dtype());
    json::array shape;
    for (std::int64_t dim : tensor.shape())
        shape.push_back(dim);
    out["shape"] = std::move(shape);
    switch (tensor.dtype()) {
    case DType::F32:
        out["values"] = encodeValues<float>(tensor);
        break;
    case DType::F64:
        out["values"] = encodeValues<double>(tensor);
        break;
    case DType::I32:
        out["values"] = encodeValues<std::int32_t>(tensor);
        break;
    case DType::I64:
        out["values"] = encodeValues<std::int64_t>(tensor);
        break;
    case DType::Bool:
        out["values"] = encodeValues<bool>(tensor);
        break;
    }
    return out;
}

Expected<Tensor> decodeTensorJson(std::string_view text, std::size_t maxBytes) {
    // Each value takes at least two characters of text, so this bounds the parse.
    if (text.size() > kMaxGraphJsonBytes)
        return makeError(ErrorCode::LimitExceeded, "tensor JSON is over the size limit");
    boost::system::error_code ec;
    json::value value = core::parsePrecise(text, ec);
    if (ec || !value.is_object())
        return malformed("tensor JSON is not an object");
    return detail::decodeTensorObject(value.get_object(), maxBytes);
}

std::string encodeTensorJson(const Tensor& tensor) {
    return json::serialize(detail::encodeTensorObject(tensor));
}

} // namespace goblin::core::graph
