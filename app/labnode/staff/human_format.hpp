// Numbers and times as people write them, for the staff command line: 1,234,567 and
// "2026-12-01 14:50 UTC". Pure; any thread.
#pragma once

#include <cstdint>
#include <string>

namespace goblin::labnode {

std::string groupedNumber(std::int64_t value); // 1234567 -> "1,234,567"
std::string utcTime(double secondsSinceEpoch); // "2026-12-01 14:50 UTC"; "-" for 0 or less

} // namespace goblin::labnode
