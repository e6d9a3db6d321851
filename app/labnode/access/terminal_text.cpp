#include "access/terminal_text.hpp"

namespace goblin::labnode::access {

std::string terminalSafe(const std::string& text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string safe;
    safe.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7F) {
            safe.append("\\x").push_back(kHex[byte >> 4]);
            safe.push_back(kHex[byte & 15]);
            continue;
        }
        safe.push_back(c);
    }
    return safe;
}

} // namespace goblin::labnode::access
