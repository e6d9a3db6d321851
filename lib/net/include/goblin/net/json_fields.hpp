// Typed, validating reads of fields from a hostile JSON control object. Every failure is an
// InvalidMessage error naming the field. Pure functions; safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"

namespace goblin::net {

Expected<std::string> requireString(const boost::json::object& object, std::string_view key);
Expected<std::int64_t> requireInt(const boost::json::object& object, std::string_view key);
Expected<double> requireNumber(const boost::json::object& object, std::string_view key);
// An integer in [minimum, maximum].
Expected<std::int64_t> requireIntIn(const boost::json::object& object, std::string_view key,
                                    std::int64_t minimum, std::int64_t maximum);
// The request id, or 0 when absent (ids are optional on messages that are not requests).
std::int64_t requestId(const boost::json::object& object);

} // namespace goblin::net
