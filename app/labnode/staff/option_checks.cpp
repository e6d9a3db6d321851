#include "staff/option_checks.hpp"

#include <sstream>
#include <stdexcept>

namespace goblin::labnode {

std::string plainNumber(double value) {
    std::ostringstream text;
    text.precision(15);
    text << value;
    return text.str();
}

template <typename T>
void requireRange(const boost::program_options::variables_map& options, const std::string& name,
                  T min, T max) {
    if (!options.count(name))
        return;
    const T value = options[name].as<T>();
    if (value >= min && value <= max)
        return;
    std::string message = "--";
    message.append(name).append(" must be between ");
    message.append(plainNumber(static_cast<double>(min))).append(" and ");
    message.append(plainNumber(static_cast<double>(max))).append(" (got ");
    throw std::invalid_argument(
        message.append(plainNumber(static_cast<double>(value))).append(")"));
}

template void requireRange<int>(const boost::program_options::variables_map&, const std::string&,
                                int, int);
template void requireRange<std::int64_t>(const boost::program_options::variables_map&,
                                         const std::string&, std::int64_t, std::int64_t);
template void requireRange<double>(const boost::program_options::variables_map&, const std::string&,
                                   double, double);

} // namespace goblin::labnode
