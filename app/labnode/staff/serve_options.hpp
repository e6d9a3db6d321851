// The options of `goblin-labnode serve`, from its command line and an optional --config file of
// `key = value` lines (the command line wins).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace goblin::labnode {

boost::program_options::options_description serveOptions();
// Throws std::invalid_argument naming the first option out of its range or set of values.
void checkServeOptions(const boost::program_options::variables_map& options);
// The parsed and checked options; nullopt when --help was asked (and printed). Throws
// std::runtime_error or boost::program_options::error on a bad command line or config file.
std::optional<boost::program_options::variables_map>
readServeCommand(const std::vector<std::string>& args);

} // namespace goblin::labnode
