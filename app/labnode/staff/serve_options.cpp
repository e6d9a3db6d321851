#include "staff/serve_options.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "staff/option_checks.hpp"

namespace goblin::labnode {

namespace po = boost::program_options;

po::options_description serveOptions() {
    po::options_description options("serve options");
    options.add_options()("help,h", "show this help")(
        "db", po::value<std::string>(), "SQLite database file (made by goblin-labnode init)")(
        "listen", po::value<std::string>()->default_value("127.0.0.1:7000"),
        "HOST:PORT to serve on (port 0 picks a free port)")(
        "public-url", po::value<std::string>(),
        "the ws:// or wss:// address researchers pass to goblin.connect, shown with a new "
        "credential on /access (default: the --listen address, or the address the browser used "
        "when --listen is 0.0.0.0 or ::)")(
        "tls-cert", po::value<std::string>(),
        "PEM certificate chain: serve TLS only (wss://, https://) on the same port")(
        "tls-key", po::value<std::string>(), "PEM private key of --tls-cert")(
        "data-dir", po::value<std::string>(),
        "blob folder (default: DB.goblin-data beside the database DB; an existing goblin-data "
        "folder of this database is kept)")("threads", po::value<int>()->default_value(2),
                                            "network threads (1 to 64)")(
        "lease-seconds", po::value<double>()->default_value(120.0, "120"),
        "lease deadline of a task (1 to 86400)")(
        "max-task-expiries", po::value<int>()->default_value(3),
        "a task whose lease expired this often is computed by the node (1 to 100)")(
        "max-tensor-mb", po::value<std::int64_t>()->default_value(1024),
        "largest tensor accepted, MiB (1 to 16384)")(
        "audit-floor", po::value<double>()->default_value(1.0, "1"),
        "least share of agreed graph tasks the node checks itself before their outputs are used "
        "(0 to 1), however trusted the volunteers; below 1 a colluding pair past probation gets "
        "a lie through with probability 1 - floor")(
        "probation-audits", po::value<std::int64_t>()->default_value(10),
        "audits a new volunteer identity passes before it is only sampled "
        "(0 to 1000000)")(
        "shared-address-audit-rate", po::value<double>()->default_value(0.5, "0.5"),
        "least audit rate of a task whose two replicas came from one network address (0 to 1)")(
        "full-audit-share", po::value<double>()->default_value(0.1, "0.1"),
        "share of graph audits that recompute the whole task (0 to 1); the others check the "
        "matmuls' values by Freivalds and recompute the rest")(
        "registrations-per-hour", po::value<int>()->default_value(20),
        "new volunteer identities admitted per network address per hour (1 to 1000000)")(
        "volunteers", po::value<std::string>()->default_value("open"),
        "'open': any volunteer works; 'approved': only those lab staff approved")(
        "max-graph-task-mb", po::value<std::int64_t>()->default_value(4096),
        "largest graph task (all its values at once), MiB (1 to 1048576); a bigger graph is "
        "cut into stages that fit")(
        "plan-volunteer-mb", po::value<std::int64_t>()->default_value(0),
        "with no volunteer connected, plan graph tasks (stages) to fit a volunteer lending this "
        "much, MiB (0: plan for the volunteers once they connect; 0 to 1048576)")(
        "audit-retention-hours", po::value<double>()->default_value(168.0, "168"),
        "keep a released graph job's data this long after it finished, so the node can recheck "
        "it if a volunteer it used is quarantined later (0: delete at release; at most 87600)")(
        "second-opinion-seconds", po::value<double>()->default_value(60.0, "60"),
        "a graph task that holds one volunteer's opinion and wants another that no connected "
        "volunteer may give (one volunteer left, say) is computed by the node after this long "
        "(0 to 86400)")(
        "retain-hours", po::value<double>()->default_value(72.0, "72"),
        "purge a finished job (done, failed, cancelled) its researcher has not fetched and "
        "released this long after it finished: its data and its records (0.01 to 87600)")(
        "access-requests", po::value<std::string>()->default_value("on"),
        "'on': researchers ask for access on /access (staff decide with `requests`); 'off'")(
        "smtp-url", po::value<std::string>(),
        "SMTP relay that mails /access sign-in codes (smtp://HOST:PORT, STARTTLS when offered, "
        "or smtps://; smtp://USER:PASS@HOST in a --config file). Without one, codes are appended "
        "to access-codes.txt in the data folder, for staff to pass on (the page says so)")(
        "smtp-from", po::value<std::string>()->default_value("gpu-goblin@localhost"),
        "sender address of the sign-in code mails");
    return options;
}

void checkServeOptions(const po::variables_map& options) {
    requireRange(options, "threads", 1, 64);
    requireRange(options, "lease-seconds", 1.0, 86400.0);
    requireRange(options, "max-task-expiries", 1, 100);
    requireRange<std::int64_t>(options, "max-tensor-mb", 1, 16384);
    requireRange(options, "audit-floor", 0.0, 1.0);
    requireRange<std::int64_t>(options, "probation-audits", 0, 1'000'000);
    requireRange(options, "shared-address-audit-rate", 0.0, 1.0);
    requireRange(options, "full-audit-share", 0.0, 1.0);
    requireRange(options, "registrations-per-hour", 1, 1'000'000);
    requireRange<std::int64_t>(options, "max-graph-task-mb", 1, 1 << 20);
    requireRange<std::int64_t>(options, "plan-volunteer-mb", 0, 1 << 20);
    requireRange(options, "audit-retention-hours", 0.0, 87600.0);
    requireRange(options, "second-opinion-seconds", 0.0, 86400.0);
    requireRange(options, "retain-hours", 0.01, 87600.0);
    const std::string volunteers = options["volunteers"].as<std::string>();
    if (volunteers != "open" && volunteers != "approved")
        throw std::invalid_argument("--volunteers must be 'open' or 'approved' (got '" +
                                    volunteers + "')");
    const std::string access = options["access-requests"].as<std::string>();
    if (access != "on" && access != "off")
        throw std::invalid_argument("--access-requests must be 'on' or 'off' (got '" + access +
                                    "')");
    if (options.count("public-url")) {
        const std::string url = options["public-url"].as<std::string>();
        const bool ws = url.rfind("ws://", 0) == 0 || url.rfind("wss://", 0) == 0;
        const bool printable = std::all_of(url.begin(), url.end(), [](char c) {
            return c > ' ' && c < 127 && c != '"' && c != '<' && c != '>';
        });
        if (!ws || !printable || url.size() > 200 || url.size() < 6)
            throw std::invalid_argument("--public-url must be a ws:// or wss:// address of at "
                                        "most 200 characters, without spaces (got '" +
                                        url + "')");
    }
}

std::optional<po::variables_map> readServeCommand(const std::vector<std::string>& args) {
    po::options_description commandLine = serveOptions();
    commandLine.add_options()("config", po::value<std::string>(),
                              "FILE of `key = value` lines with the keys of these options (db, "
                              "listen, …); the command line wins");
    po::variables_map options;
    po::store(po::command_line_parser(args).options(commandLine).run(), options);
    if (options.count("help")) {
        std::cout << "usage: goblin-labnode serve --db PATH [options]\n"
                     "       goblin-labnode serve --config FILE [options]\n\n"
                     "Runs the lab node on the database made by init. Only one node serves a\n"
                     "database: a second serve on it exits at once, naming the running one.\n\n"
                  << commandLine << std::endl;
        return std::nullopt;
    }
    if (options.count("config")) {
        const std::string file = options["config"].as<std::string>();
        std::ifstream in(file);
        if (!in) {
            std::string message = "cannot read --config ";
            message.append(file);
            throw std::runtime_error(message);
        }
        try {
            po::store(po::parse_config_file(in, serveOptions()), options);
        } catch (const po::error& error) {
            std::string message = "--config ";
            message.append(file).append(": ").append(error.what());
            throw std::runtime_error(message);
        }
    }
    po::notify(options);
    checkServeOptions(options);
    return options;
}

} // namespace goblin::labnode
