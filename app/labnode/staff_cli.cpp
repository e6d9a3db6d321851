#include "staff_cli.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace po = boost::program_options;

namespace goblin::labnode {

std::optional<po::variables_map> parseCommand(const std::vector<std::string>& args,
                                              po::options_description options,
                                              const po::positional_options_description& positional,
                                              const CommandUsage& usage) {
    options.add_options()("help,h", "show this help")("db", po::value<std::string>(),
                                                      "the node's SQLite database (made by init)");
    po::variables_map parsed;
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), parsed);
    if (parsed.count("help")) {
        std::cout << "usage: " << usage.synopsis << "\n\n"
                  << usage.description << "\n\n"
                  << options << std::endl;
        return std::nullopt;
    }
    po::notify(parsed);
    return parsed;
}

std::string existingDatabase(const po::variables_map& options) {
    if (!options.count("db"))
        throw std::runtime_error("--db PATH is required (--help for usage)");
    const std::string path = options["db"].as<std::string>();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        std::string message = "no database at ";
        message.append(path).append(" (create one with: goblin-labnode init --db ");
        message.append(path).append(")");
        throw std::runtime_error(message);
    }
    return path;
}

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

double wallClock() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace goblin::labnode
