// Error codes used in-process and on the wire, and the Expected<T> result type.
// Plain values; safe on any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

template <class T> using Expected = tl::expected<T, Error>;

[[nodiscard]] inline tl::unexpected<Error> makeError(ErrorCode code, std::string message) {
    return tl::unexpected<Error>(Error{code, std::move(message)});
}

} // namespace goblin
