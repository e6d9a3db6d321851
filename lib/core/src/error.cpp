#include "goblin/core/error.hpp"

#include <array>
#include <utility>

namespace goblin {
namespace {

constexpr std::array<std::pair<ErrorCode, std::string_view>, 14> kNames{{
    {ErrorCode::InvalidFrame, "invalid_frame"},
    {ErrorCode::InvalidMessage, "invalid_message"},
    {ErrorCode::LimitExceeded, "limit_exceeded"},
    {ErrorCode::UnsupportedDtype, "unsupported_dtype"},
    {ErrorCode::ShapeMismatch, "shape_mismatch"},
    {ErrorCode::InvalidInput, "invalid_input"},
    {ErrorCode::VersionMismatch, "version_mismatch"},
    {ErrorCode::Unauthenticated, "unauthenticated"},
    {ErrorCode::Banned, "banned"},
    {ErrorCode::NotFound, "not_found"},
    {ErrorCode::VerificationFailed, "verification_failed"},
    {ErrorCode::Timeout, "timeout"},
    {ErrorCode::Internal, "internal"},
    {ErrorCode::Cancelled, "cancelled"},
}};

} // namespace

std::string_view wireName(ErrorCode code) {
    for (const auto& [candidate, name] : kNames) {
        if (candidate == code)
            return name;
    }
    return "internal";
}

std::optional<ErrorCode> errorCodeFromWireName(std::string_view name) {
    for (const auto& [code, candidate] : kNames) {
        if (candidate == name)
            return code;
    }
    return std::nullopt;
}

std::string Error::describe() const {
    std::string text(wireName(code));
    text += ": ";
    text += message;
    return text;
}

} // namespace goblin
