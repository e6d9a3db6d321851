// The researcher access request form: its fields, their limits and their validation. A request
// that fails any check is refused whole (nothing is stored) with one message per problem. Pure;
// any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "access/form_encoding.hpp"

namespace goblin::labnode::access {

struct FieldLimit {
    std::string_view name;  // the form field's name
    std::string_view label; // what the page calls it
    std::size_t maxBytes;
    bool required;
    bool multiline;
};

inline constexpr FieldLimit kNameField{"name", "Name", 200, true, false};
inline constexpr FieldLimit kInstitutionField{"institution", "Institution", 200, true, false};
inline constexpr FieldLimit kPurposeField{"purpose", "Research purpose", 4000, true, true};
inline constexpr FieldLimit kNeedsField{"needs", "Tell us what your research needs", 4000, false,
                                        true};
inline constexpr FieldLimit kScaleField{"scale", "Expected scale", 500, true, true};
inline constexpr FieldLimit kEmailField{"email", "E-mail address", 254, true, false};

// The computation types a researcher can tick, in the order the form shows them.
inline constexpr std::string_view kComputations[] = {"matmul", "graph", "training"};

// The largest form body the node reads (every field at its limit, percent-encoded, fits).
inline constexpr std::size_t kMaxFormBodyBytes = 64 * 1024;

struct AccessRequestForm {
    std::string name;
    std::string institution;
    std::string purpose;
    std::vector<std::string> computations; // a subset of kComputations, in their order
    std::string needs;
    std::string scale;
};

struct FormCheck {
    AccessRequestForm form;          // meaningful only when errors is empty
    std::vector<std::string> errors; // "Name: at most 200 characters (got 201)"
};

FormCheck checkAccessRequest(const FormFields& fields);

// A single-line or multi-line text field: trimmed; "" with a message in `errors` when it is too
// long, required and empty, not UTF-8 or holds control characters (tab and newline allowed where
// multi-line).
std::string checkedText(const FormFields& fields, const FieldLimit& limit,
                        std::vector<std::string>& errors);

} // namespace goblin::labnode::access
