// Error codes used in-process and on the wire, and the Expected<T> result type.
// Plain values; safe on any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <tl/expected.hpp>

namespace goblin {

enum class ErrorCode {
    InvalidFrame,
    InvalidMessage,
    LimitExceeded,
    UnsupportedDtype,
    ShapeMismatch,
    InvalidInput,
    VersionMismatch,
    Unauthenticated,
    Banned,
    NotFound,
    VerificationFailed,
    Timeout,
    Internal,
    Cancelled, // a job its researcher or lab staff cancelled
};

// The snake_case name used on the wire ("invalid_frame", ...).
std::string_view wireName(ErrorCode code);
std::optional<ErrorCode> errorCodeFromWireName(std::string_view name);

struct Error {
    ErrorCode code = ErrorCode::Internal;
    std::string message;

    // "<wire name>: <message>", the form used in logs and close reasons.
    [[nodiscard]] std::string describe() const;
};

// A value or an Error. [[nodiscard]] on the type: every function returning one makes its caller
// look at it (or say `(void)` where ignoring it is the point).
template <class T> class [[nodiscard]] Expected : public tl::expected<T, Error> {
public:
    using Base = tl::expected<T, Error>;
    using Base::Base;
    using Base::operator=;
    Expected() = default;
    Expected(const Base& other) : Base(other) {}
    Expected(Base&& other) : Base(std::move(other)) {}
};

[[nodiscard]] inline tl::unexpected<Error> makeError(ErrorCode code, std::string message) {
    return tl::unexpected<Error>(Error{code, std::move(message)});
}

} // namespace goblin
