#include "staff/json_output.hpp"

#include <ctime>
#include <iostream>

#include <boost/json/serialize.hpp>

namespace goblin::labnode {

void addJsonOption(boost::program_options::options_description& options) {
    options.add_options()("json", "print one JSON document (for scripts) instead of text");
}

bool wantsJson(const boost::program_options::variables_map& options) {
    return options.count("json") != 0;
}

boost::json::value jsonTime(double secondsSinceEpoch) {
    if (secondsSinceEpoch <= 0)
        return nullptr;
    const auto when = static_cast<std::time_t>(secondsSinceEpoch);
    std::tm parts{};
    gmtime_r(&when, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return boost::json::string(text);
}

void printJson(const boost::json::value& document) {
    std::cout << boost::json::serialize(document) << std::endl;
}

} // namespace goblin::labnode
