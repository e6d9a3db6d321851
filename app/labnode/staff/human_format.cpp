#include "staff/human_format.hpp"

#include <ctime>

namespace goblin::labnode {

std::string groupedNumber(std::int64_t value) {
    const std::string digits = std::to_string(value);
    const std::size_t sign = value < 0 ? 1 : 0;
    std::string grouped = digits.substr(0, sign);
    for (std::size_t i = sign; i < digits.size(); ++i) {
        if (i > sign && (digits.size() - i) % 3 == 0)
            grouped.push_back(',');
        grouped.push_back(digits[i]);
    }
    return grouped;
}

std::string utcTime(double secondsSinceEpoch) {
    if (secondsSinceEpoch <= 0)
        return "-";
    const auto when = static_cast<std::time_t>(secondsSinceEpoch);
    std::tm parts{};
    gmtime_r(&when, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &parts);
    return text;
}

} // namespace goblin::labnode
