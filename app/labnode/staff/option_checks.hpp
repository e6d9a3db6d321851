// Range checks of the numeric options of goblin-labnode's commands, so a bad value stops the
// command at startup with a message naming the option and its range. Main thread.
#pragma once

#include <cstdint>
#include <string>

#include <boost/program_options.hpp>

namespace goblin::labnode {

// Throws std::invalid_argument "--NAME must be between MIN and MAX (got VALUE)" when the option
// (of type T: int, std::int64_t or double) is present and outside [min, max]; NaN is outside.
template <typename T>
void requireRange(const boost::program_options::variables_map& options, const std::string& name,
                  T min, T max);

// A number as people write it in a command line: 0.1, 120, 1e+06.
std::string plainNumber(double value);

extern template void requireRange<int>(const boost::program_options::variables_map&,
                                       const std::string&, int, int);
extern template void requireRange<std::int64_t>(const boost::program_options::variables_map&,
                                                const std::string&, std::int64_t, std::int64_t);
extern template void requireRange<double>(const boost::program_options::variables_map&,
                                          const std::string&, double, double);

} // namespace goblin::labnode
