#include "access/access_form.hpp"

#include <algorithm>

namespace goblin::labnode::access {
namespace {

// Well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool validUtf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        std::size_t length = 0;
        unsigned min = 0;
        unsigned point = 0;
        if (byte < 0x80) {
            ++i;
            continue;
        }
        if ((byte & 0xE0) == 0xC0) {
            length = 2;
            min = 0x80;
            point = byte & 0x1F;
        } else if ((byte & 0xF0) == 0xE0) {
            length = 3;
            min = 0x800;
            point = byte & 0x0F;
        } else if ((byte & 0xF8) == 0xF0) {
            length = 4;
            min = 0x10000;
            point = byte & 0x07;
        } else {
            return false;
        }
        if (i + length > text.size())
            return false;
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80)
                return false;
            point = (point << 6) | (next & 0x3F);
        }
        if (point < min || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF))
            return false;
        i += length;
    }
    return true;
}

bool hasControl(std::string_view text, bool multiline) {
    return std::any_of(text.begin(), text.end(), [multiline](char c) {
        const auto byte = static_cast<unsigned char>(c);
        if (multiline && (c == '\n' || c == '\r' || c == '\t'))
            return false;
        return byte < 0x20 || byte == 0x7F;
    });
}

std::string_view trim(std::string_view text) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!text.empty() && blank(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && blank(text.back()))
        text.remove_suffix(1);
    return text;
}

void complain(std::vector<std::string>& errors, const FieldLimit& limit, std::string_view what) {
    std::string message(limit.label);
    message.append(": ").append(what);
    errors.push_back(std::move(message));
}

} // namespace

std::string checkedText(const FormFields& fields, const FieldLimit& limit,
                        std::vector<std::string>& errors) {
    const std::optional<std::string> raw = fieldValue(fields, limit.name);
    const std::string_view value = trim(raw ? std::string_view(*raw) : std::string_view());
    if (value.size() > limit.maxBytes) {
        std::string what = "at most ";
        what.append(std::to_string(limit.maxBytes))
            .append(" bytes (got ")
            .append(std::to_string(value.size()))
            .append(")");
        complain(errors, limit, what);
        return {};
    }
    if (!validUtf8(value)) {
        complain(errors, limit, "not valid UTF-8 text");
        return {};
    }
    if (hasControl(value, limit.multiline)) {
        complain(errors, limit,
                 limit.multiline ? "control characters are not allowed"
                                 : "one line of text, without control characters");
        return {};
    }
    if (value.empty() && limit.required) {
        complain(errors, limit, "required");
        return {};
    }
    return std::string(value);
}

FormCheck checkAccessRequest(const FormFields& fields) {
    FormCheck check;
    AccessRequestForm& form = check.form;
    form.name = checkedText(fields, kNameField, check.errors);
    form.institution = checkedText(fields, kInstitutionField, check.errors);
    form.purpose = checkedText(fields, kPurposeField, check.errors);
    form.needs = checkedText(fields, kNeedsField, check.errors);
    form.scale = checkedText(fields, kScaleField, check.errors);
    const std::vector<std::string> ticked = fieldValues(fields, "computation");
    for (const std::string& value : ticked) {
        if (std::find(std::begin(kComputations), std::end(kComputations), value) ==
            std::end(kComputations)) {
            check.errors.emplace_back("Computation types: unknown type (choose matmul, graph or "
                                      "training)");
            break;
        }
    }
    for (const std::string_view kind : kComputations)
        if (std::find(ticked.begin(), ticked.end(), kind) != ticked.end())
            form.computations.emplace_back(kind);
    if (form.computations.empty() && form.needs.empty() && check.errors.empty())
        check.errors.emplace_back("Computation types: tick at least one, or tell us what your "
                                  "research needs");
    return check;
}

} // namespace goblin::labnode::access
