// Text a researcher typed, made safe for a staff member's terminal (`requests list|show`). Pure.
#pragma once

#include <string>

namespace goblin::labnode::access {

// Control characters and escapes (other than line breaks and tabs) become \xNN; the rest,
// `<script>` included, is printed as typed (a terminal runs no markup).
std::string terminalSafe(const std::string& text);

} // namespace goblin::labnode::access
