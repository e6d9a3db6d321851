#include "staff/staff_cli.hpp"

#include <chrono>
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

double wallClock() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

int runStaffAction(const std::vector<std::string>& args, const std::string& group,
                   const std::vector<StaffAction>& actions) {
    const std::string action = args.empty() ? std::string() : args.front();
    const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    for (const StaffAction& known : actions)
        if (known.name == action)
            return known.run(rest);
    if (action == "--help" || action == "-h") {
        std::cout << "usage:\n";
        for (const StaffAction& known : actions)
            std::cout << "  " << known.usage->synopsis << "\n";
        std::cout << "(--help after an action for its options)\n";
        return 0;
    }
    std::string usage = "usage: goblin-labnode ";
    usage.append(group).append(" ");
    for (std::size_t i = 0; i < actions.size(); ++i)
        usage.append(i == 0 ? "" : "|").append(actions[i].name);
    throw std::runtime_error(usage.append(" ... --db PATH (--help for more)"));
}

} // namespace goblin::labnode
