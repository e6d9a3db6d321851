// E-mail addresses of researchers, as lab staff type them: a pragmatic check (one '@', a dot-atom
// local part, a domain of LDH labels with a dot), not RFC 5322's full grammar. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

#include "goblin/core/error.hpp"

namespace goblin::labnode {

// The address lower-cased (so Ada@Lab.example and ada@lab.example are one researcher: mail
// providers treat local parts case-insensitively too), or InvalidInput saying what is wrong.
[[nodiscard]] Expected<std::string> normalizeEmail(std::string_view address);

} // namespace goblin::labnode
