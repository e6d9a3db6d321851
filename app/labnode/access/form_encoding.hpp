// What the access pages read from a browser's request: application/x-www-form-urlencoded bodies
// and the Cookie field. Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "goblin/core/error.hpp"

namespace goblin::labnode::access {

using FormFields = std::vector<std::pair<std::string, std::string>>;

// name=value&… with '+' as space and %XX escapes; InvalidInput for a malformed escape.
[[nodiscard]] Expected<FormFields> parseUrlEncoded(std::string_view body);

// The first value of `name`, or nullopt when absent.
std::optional<std::string> fieldValue(const FormFields& fields, std::string_view name);
// Every value of `name` (checkboxes), in order.
std::vector<std::string> fieldValues(const FormFields& fields, std::string_view name);

// The value of cookie `name` in a Cookie field ("a=1; b=2"), or nullopt.
std::optional<std::string> cookieValue(std::string_view cookieField, std::string_view name);

} // namespace goblin::labnode::access
