#include "goblin/net/json_fields.hpp"

namespace goblin::net {
namespace {

tl::unexpected<Error> fieldError(std::string_view key, std::string_view what) {
    return makeError(ErrorCode::InvalidMessage,
                     "field '" + std::string(key) + "' " + std::string(what));
}

} // namespace

Expected<std::string> requireString(const boost::json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    if (!value)
        return fieldError(key, "is missing");
    if (!value->is_string())
        return fieldError(key, "is not a string");
    return std::string(value->get_string());
}

Expected<std::int64_t> requireInt(const boost::json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    if (!value)
        return fieldError(key, "is missing");
    if (value->is_int64())
        return value->get_int64();
    if (value->is_uint64() && value->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(value->get_uint64());
    return fieldError(key, "is not an integer");
}

Expected<double> requireNumber(const boost::json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    if (!value)
        return fieldError(key, "is missing");
    if (value->is_double())
        return value->get_double();
    if (value->is_int64())
        return static_cast<double>(value->get_int64());
    if (value->is_uint64())
        return static_cast<double>(value->get_uint64());
    return fieldError(key, "is not a number");
}

Expected<std::int64_t> requireIntIn(const boost::json::object& object, std::string_view key,
                                    std::int64_t minimum, std::int64_t maximum) {
    auto value = requireInt(object, key);
    if (!value)
        return value;
    if (*value < minimum || *value > maximum)
        return fieldError(key, "is out of range " + std::to_string(minimum) + ".." +
                                   std::to_string(maximum));
    return value;
}

std::int64_t requestId(const boost::json::object& object) {
    const auto* value = object.if_contains("id");
    if (value && value->is_int64())
        return value->get_int64();
    return 0;
}

} // namespace goblin::net
