#include "goblin/core/ops/attributes.hpp"

namespace goblin::core::ops {
namespace {

tl::unexpected<Error> wrongType(std::string_view name, const char* want) {
    return makeError(ErrorCode::InvalidInput,
                     "attribute '" + std::string(name) + "' must be " + want);
}

tl::unexpected<Error> missing(std::string_view name) {
    return makeError(ErrorCode::InvalidInput, "attribute '" + std::string(name) + "' is required");
}

} // namespace

Expected<bool> attrBool(const Attributes& attrs, std::string_view name,
                        std::optional<bool> fallback) {
    auto it = attrs.find(name);
    if (it == attrs.end())
        return fallback ? Expected<bool>(*fallback) : missing(name);
    if (const bool* value = std::get_if<bool>(&it->second))
        return *value;
    return wrongType(name, "a boolean");
}

Expected<std::int64_t> attrInt(const Attributes& attrs, std::string_view name,
                               std::optional<std::int64_t> fallback) {
    auto it = attrs.find(name);
    if (it == attrs.end())
        return fallback ? Expected<std::int64_t>(*fallback) : missing(name);
    if (const auto* value = std::get_if<std::int64_t>(&it->second))
        return *value;
    return wrongType(name, "an integer");
}

Expected<std::optional<double>> attrOptionalNumber(const Attributes& attrs, std::string_view name) {
    auto it = attrs.find(name);
    if (it == attrs.end())
        return std::optional<double>{};
    if (const auto* value = std::get_if<double>(&it->second))
        return std::optional<double>{*value};
    if (const auto* value = std::get_if<std::int64_t>(&it->second))
        return std::optional<double>{static_cast<double>(*value)};
    return wrongType(name, "a number");
}

Expected<IntList> attrIntList(const Attributes& attrs, std::string_view name,
                              std::optional<IntList> fallback) {
    auto it = attrs.find(name);
    if (it == attrs.end())
        return fallback ? Expected<IntList>(*fallback) : missing(name);
    if (const auto* value = std::get_if<IntList>(&it->second))
        return *value;
    return wrongType(name, "a list of integers");
}

Expected<std::string> attrString(const Attributes& attrs, std::string_view name,
                                 std::optional<std::string> fallback) {
    auto it = attrs.find(name);
    if (it == attrs.end())
        return fallback ? Expected<std::string>(*fallback) : missing(name);
    if (const auto* value = std::get_if<std::string>(&it->second))
        return *value;
    return wrongType(name, "a string");
}

Expected<DType> attrDType(const Attributes& attrs, std::string_view name) {
    auto text = attrString(attrs, name, std::nullopt);
    if (!text)
        return tl::unexpected(text.error());
    auto dtype = dtypeFromWireName(*text);
    if (!dtype)
        return makeError(ErrorCode::UnsupportedDtype, "unknown dtype '" + *text + "'");
    return *dtype;
}

Expected<void> onlyAttributes(const Attributes& attrs,
                              std::initializer_list<std::string_view> allowed) {
    for (const auto& [name, value] : attrs) {
        bool known = false;
        for (std::string_view candidate : allowed)
            known = known || candidate == name;
        if (!known)
            return makeError(ErrorCode::InvalidInput, "unknown attribute '" + name + "'");
    }
    return {};
}

} // namespace goblin::core::ops
