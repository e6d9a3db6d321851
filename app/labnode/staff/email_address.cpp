#include "staff/email_address.hpp"

#include <algorithm>
#include <cctype>

namespace goblin::labnode {
namespace {

constexpr std::size_t kMaxAddress = 254, kMaxLocal = 64, kMaxLabel = 63;

bool isAtomChar(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) ||
           std::string_view("!#$%&'*+/=?^_`{|}~-").find(c) != std::string_view::npos;
}

// Dot-separated parts, each non-empty and made of `allowed` characters.
template <class Allowed> bool dotted(std::string_view text, std::size_t maxPart, Allowed allowed) {
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = std::min(text.find('.', start), text.size());
        const std::string_view part = text.substr(start, dot - start);
        if (part.empty() || part.size() > maxPart ||
            !std::all_of(part.begin(), part.end(), allowed))
            return false;
        if (dot == text.size())
            return true;
        start = dot + 1;
    }
}

bool isLabelChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
}

Expected<std::string> invalid(std::string_view address, const char* why) {
    std::string message = "'";
    message.append(address).append("' is not an e-mail address: ").append(why);
    return makeError(ErrorCode::InvalidInput, message);
}

} // namespace

Expected<std::string> normalizeEmail(std::string_view address) {
    if (address.empty())
        return invalid(address, "it is empty");
    if (address.size() > kMaxAddress)
        return invalid(address.substr(0, 40), "longer than 254 characters");
    const std::size_t at = address.find('@');
    if (at == std::string_view::npos || address.find('@', at + 1) != std::string_view::npos)
        return invalid(address, "it needs exactly one '@'");
    const std::string_view local = address.substr(0, at);
    const std::string_view domain = address.substr(at + 1);
    if (local.empty() || !dotted(local, kMaxLocal, isAtomChar))
        return invalid(address, "the part before '@' is empty or has a character not allowed");
    if (domain.find('.') == std::string_view::npos)
        return invalid(address, "the domain needs a dot (name.example)");
    if (!dotted(domain, kMaxLabel, isLabelChar))
        return invalid(address, "the domain has an empty label or a character not allowed");
    std::size_t start = 0;
    while (start < domain.size()) {
        const std::size_t dot = std::min(domain.find('.', start), domain.size());
        if (domain[start] == '-' || domain[dot - 1] == '-')
            return invalid(address, "a domain label starts or ends with '-'");
        start = dot + 1;
    }
    std::string normalized;
    for (char c : address)
        normalized.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    return normalized;
}

} // namespace goblin::labnode
