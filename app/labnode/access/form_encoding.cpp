#include "access/form_encoding.hpp"

namespace goblin::labnode::access {
namespace {

int hexDigit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

Expected<std::string> decodeComponent(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+') {
            out.push_back(' ');
            continue;
        }
        if (c != '%') {
            out.push_back(c);
            continue;
        }
        const int high = i + 2 < text.size() ? hexDigit(text[i + 1]) : -1;
        const int low = i + 2 < text.size() ? hexDigit(text[i + 2]) : -1;
        if (high < 0 || low < 0)
            return makeError(ErrorCode::InvalidInput, "the form has a malformed % escape");
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
    }
    return out;
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && text.front() == ' ')
        text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ')
        text.remove_suffix(1);
    return text;
}

} // namespace

Expected<FormFields> parseUrlEncoded(std::string_view body) {
    FormFields fields;
    while (!body.empty()) {
        const auto amp = body.find('&');
        const std::string_view pair = body.substr(0, amp);
        body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
        if (pair.empty())
            continue;
        const auto equals = pair.find('=');
        auto name = decodeComponent(pair.substr(0, equals));
        if (!name)
            return tl::unexpected(name.error());
        auto value = decodeComponent(equals == std::string_view::npos ? std::string_view()
                                                                      : pair.substr(equals + 1));
        if (!value)
            return tl::unexpected(value.error());
        fields.emplace_back(std::move(*name), std::move(*value));
    }
    return fields;
}

std::optional<std::string> fieldValue(const FormFields& fields, std::string_view name) {
    for (const auto& [key, value] : fields)
        if (key == name)
            return value;
    return std::nullopt;
}

std::vector<std::string> fieldValues(const FormFields& fields, std::string_view name) {
    std::vector<std::string> values;
    for (const auto& [key, value] : fields)
        if (key == name)
            values.push_back(value);
    return values;
}

std::optional<std::string> cookieValue(std::string_view cookieField, std::string_view name) {
    while (!cookieField.empty()) {
        const auto semicolon = cookieField.find(';');
        const std::string_view pair = trimmed(cookieField.substr(0, semicolon));
        cookieField = semicolon == std::string_view::npos ? std::string_view()
                                                          : cookieField.substr(semicolon + 1);
        const auto equals = pair.find('=');
        if (equals != std::string_view::npos && pair.substr(0, equals) == name)
            return std::string(pair.substr(equals + 1));
    }
    return std::nullopt;
}

} // namespace goblin::labnode::access
