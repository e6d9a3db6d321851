#include "goblin/net/close_reason.hpp"

namespace goblin::net {

std::uint16_t closeCodeFor(ErrorCode code) {
    switch (code) {
    case ErrorCode::Unauthenticated:
        return 4001;
    case ErrorCode::VersionMismatch:
        return 4002;
    case ErrorCode::Banned:
        return 4003;
    case ErrorCode::InvalidFrame:
    case ErrorCode::InvalidMessage:
        return 1002;
    case ErrorCode::LimitExceeded:
        return 1009;
    case ErrorCode::Timeout:
        return 1001;
    default:
        return 1011;
    }
}

std::string closeReasonFor(const Error& error) {
    constexpr std::size_t kMaxReason = 123;
    std::string reason = error.describe();
    if (reason.size() <= kMaxReason)
        return reason;
    std::size_t cut = kMaxReason;
    // Never split a UTF-8 sequence: back up over continuation bytes.
    while (cut > 0 && (static_cast<unsigned char>(reason[cut]) & 0xC0) == 0x80)
        --cut;
    reason.resize(cut);
    return reason;
}

Error closeErrorFromPeer(std::uint16_t closeCode, const std::string& reason) {
    const auto colon = reason.find(':');
    if (colon != std::string::npos) {
        if (auto code = errorCodeFromWireName(reason.substr(0, colon))) {
            std::string message = reason.substr(colon + 1);
            if (!message.empty() && message.front() == ' ')
                message.erase(0, 1);
            return Error{*code, message};
        }
    }
    const std::string text = "peer closed the connection (" + std::to_string(closeCode) +
                             (reason.empty() ? "" : " " + reason) + ")";
    switch (closeCode) {
    case 4001:
        return Error{ErrorCode::Unauthenticated, text};
    case 4002:
        return Error{ErrorCode::VersionMismatch, text};
    case 4003:
        return Error{ErrorCode::Banned, text};
    case 1009:
        return Error{ErrorCode::LimitExceeded, text};
    case 1002:
        return Error{ErrorCode::InvalidMessage, text};
    default:
        return Error{ErrorCode::Internal, text};
    }
}

} // namespace goblin::net
