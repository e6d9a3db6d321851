// goblin-labnode: the composition root. `serve` builds the store, blob store, coordinator and
// WebSocket server and runs their threads; `researcher add` creates a researcher credential.
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/program_options.hpp>

#include "admission_store.hpp"
#include "blob_store.hpp"
#include "coordinator.hpp"
#include "goblin/net/ws_server.hpp"
#include "node_connection.hpp"
#include "node_store.hpp"
#include "secrets.hpp"

namespace asio = boost::asio;
namespace po = boost::program_options;
using namespace goblin;
using namespace goblin::labnode;

namespace {

std::mutex logMutex;

void logLine(const std::string& line) {
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::lock_guard lock(logMutex);
    std::cout << stamp << ' ' << line << std::endl;
}

double wallClock() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::pair<std::string, unsigned short> splitHostPort(const std::string& listen) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos)
        throw std::runtime_error("--listen wants HOST:PORT, got '" + listen + "'");
    const int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535)
        throw std::runtime_error("port out of range in --listen " + listen);
    return {listen.substr(0, colon), static_cast<unsigned short>(port)};
}

int serve(const po::variables_map& options) {
    const std::string dbPath = options["db"].as<std::string>();
    std::filesystem::path dataDir =
        options.count("data-dir") ? std::filesystem::path(options["data-dir"].as<std::string>())
                                  : std::filesystem::absolute(dbPath).parent_path() / "goblin-data";
    NodeStore store(dbPath);
    BlobStore blobs(dataDir);

    CoordinatorSettings settings;
    settings.leaseSeconds = options["lease-seconds"].as<double>();
    settings.maxTaskExpiries = options["max-task-expiries"].as<int>();
    if (settings.maxTaskExpiries < 1)
        throw std::invalid_argument("--max-task-expiries must be at least 1");
    settings.maxGraphTaskBytes = options["max-graph-task-mb"].as<std::int64_t>() << 20;
    if (settings.maxGraphTaskBytes <= 0)
        throw std::invalid_argument("--max-graph-task-mb must be positive");
    settings.trust.auditFloor = options["audit-floor"].as<double>();
    settings.trust.probationAudits = options["probation-audits"].as<std::int64_t>();
    settings.trust.sharedAddressRate = options["shared-address-audit-rate"].as<double>();
    settings.trust.fullAuditShare = options["full-audit-share"].as<double>();
    if (!(settings.trust.auditFloor >= 0.0 && settings.trust.auditFloor <= 1.0) ||
        !(settings.trust.sharedAddressRate >= 0.0 && settings.trust.sharedAddressRate <= 1.0) ||
        !(settings.trust.fullAuditShare >= 0.0 && settings.trust.fullAuditShare <= 1.0))
        throw std::invalid_argument("audit rates must be between 0 and 1");
    if (settings.trust.probationAudits < 0)
        throw std::invalid_argument("--probation-audits must not be negative");
    settings.registrationsPerHour = options["registrations-per-hour"].as<int>();
    if (settings.registrationsPerHour < 1)
        throw std::invalid_argument("--registrations-per-hour must be at least 1");
    const std::string policy = options["volunteers"].as<std::string>();
    if (policy != "open" && policy != "approved")
        throw std::invalid_argument("--volunteers must be 'open' or 'approved'");
    settings.volunteers = policy == "approved" ? VolunteerPolicy::Approved : VolunteerPolicy::Open;
    settings.limits.maxTensorBytes = options["max-tensor-mb"].as<std::size_t>() << 20;
    settings.auditRetentionSeconds = options["audit-retention-hours"].as<double>() * 3600.0;
    if (!(settings.auditRetentionSeconds >= 0.0))
        throw std::invalid_argument("--audit-retention-hours must not be negative");

    const int networkThreads = std::max(1, options["threads"].as<int>());
    asio::io_context network(networkThreads);
    asio::io_context core(1);
    asio::thread_pool workers(std::max(2u, std::thread::hardware_concurrency()));
    auto coreWork = asio::make_work_guard(core);
    core::SecureRandom random;

    Coordinator coordinator(NodeContext{core, workers, store, blobs, wallClock, logLine, random},
                            settings);
    std::atomic<std::uint64_t> nextPeer{1};
    auto server = std::make_shared<net::WsServer>(
        network, settings.limits, std::vector<std::string>{"/v1/volunteer", "/v1/researcher"},
        [&](const std::shared_ptr<net::WsConnection>& connection, const std::string& path) {
            const std::uint64_t peer = nextPeer++;
            const PeerRole role =
                path == "/v1/volunteer" ? PeerRole::Volunteer : PeerRole::Researcher;
            asio::post(core, [&coordinator, peer, connection, role] {
                coordinator.onConnected(peer, std::make_shared<WsPeerLink>(connection), role);
            });
            return std::make_shared<NodeConnection>(core, coordinator, peer);
        });
    const auto [host, port] = splitHostPort(options["listen"].as<std::string>());
    server->listen(host, port);
    {
        std::lock_guard lock(logMutex);
        std::cout << "goblin-labnode listening on " << host << ":" << server->port() << std::endl;
    }
    logLine("database " + dbPath + ", data directory " + dataDir.string());
    if (settings.trust.auditFloor == 0.0 && settings.trust.probationAudits == 0)
        logLine("WARNING: graph audits are off (--audit-floor 0 --probation-audits 0): "
                "volunteers that agree on a wrong answer are not caught");
    asio::post(core, [&coordinator] { coordinator.start(); });
    server->start();

    asio::signal_set signals(network, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int signal) {
        logLine("signal " + std::to_string(signal) + ": shutting down");
        server->stop();
        asio::post(core, [&] {
            coordinator.stop();
            coreWork.reset();
        });
        // Give close frames a moment to leave, then stop the network threads.
        auto timer = std::make_shared<asio::steady_timer>(network, std::chrono::milliseconds(300));
        timer->async_wait([&network, timer](const boost::system::error_code&) { network.stop(); });
    });

    std::thread coreThread([&core] { core.run(); });
    std::vector<std::thread> networkPool;
    for (int i = 1; i < networkThreads; ++i)
        networkPool.emplace_back([&network] { network.run(); });
    network.run();
    for (auto& thread : networkPool)
        thread.join();
    core.stop();
    coreThread.join();
    workers.join();
    logLine("stopped");
    return 0;
}

int volunteerCommand(const std::string& action, const po::variables_map& options) {
    NodeStore store(options["db"].as<std::string>());
    if (action == "approve") {
        if (!options.count("volunteer"))
            throw std::runtime_error("usage: goblin-labnode volunteer approve ID --db PATH");
        const std::string id = options["volunteer"].as<std::string>();
        const double now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        if (auto ok = approveVolunteer(store.database(), id, now); !ok)
            throw std::runtime_error(ok.error().message);
        std::cout << "approved " << id << std::endl;
        return 0;
    }
    for (const VolunteerListing& volunteer : listVolunteers(store.database()))
        std::cout << volunteer.id << "\t" << (volunteer.backend.empty() ? "-" : volunteer.backend)
                  << "\t"
                  << (volunteer.quarantined ? "quarantined"
                      : volunteer.approved  ? "approved"
                                            : "not-approved")
                  << "\taccepted=" << volunteer.accepted << "\trejected=" << volunteer.rejected
                  << "\n";
    return 0;
}

int researcherAdd(const po::variables_map& options) {
    const std::string email = options["email"].as<std::string>();
    if (email.size() > 254 || email.find('@') == std::string::npos || email.front() == '@' ||
        email.back() == '@')
        throw std::runtime_error("'" + email + "' is not an e-mail address");
    NodeStore store(options["db"].as<std::string>());
    const std::string token = newSecret();
    auto id = store.addResearcher(email, hashSecret(token));
    if (!id)
        throw std::runtime_error(id.error().message);
    std::cout << token << std::endl;
    return 0;
}

void printUsage(const po::options_description& serveOptions) {
    std::cerr << "usage:\n"
                 "  goblin-labnode serve --db PATH [--listen HOST:PORT] [--data-dir DIR]\n"
                 "  goblin-labnode researcher add EMAIL --db PATH\n"
                 "  goblin-labnode volunteer list --db PATH\n"
                 "  goblin-labnode volunteer approve ID --db PATH\n\n"
              << serveOptions;
}

} // namespace

int main(int argc, char** argv) {
    po::options_description serveOptions("options");
    serveOptions.add_options()("help,h", "show this help")(
        "db", po::value<std::string>(), "SQLite database file (created when missing)")(
        "listen", po::value<std::string>()->default_value("127.0.0.1:7000"),
        "HOST:PORT to serve on (port 0 picks a free port)")(
        "data-dir", po::value<std::string>(),
        "blob folder (default: goblin-data beside the database)")(
        "threads", po::value<int>()->default_value(2), "network threads")(
        "lease-seconds", po::value<double>()->default_value(120.0), "lease deadline of a task")(
        "max-task-expiries", po::value<int>()->default_value(3),
        "a task whose lease expired this often is computed by the node")(
        "max-tensor-mb", po::value<std::size_t>()->default_value(1024),
        "largest tensor accepted, MiB")(
        "audit-floor", po::value<double>()->default_value(0.1),
        "least share of agreed graph tasks the node recomputes itself (0 to 1), however trusted "
        "the volunteers")("probation-audits", po::value<std::int64_t>()->default_value(10),
                          "audits a new volunteer identity passes before it is only sampled")(
        "shared-address-audit-rate", po::value<double>()->default_value(0.5),
        "least audit rate of a task whose two replicas came from one network address")(
        "full-audit-share", po::value<double>()->default_value(0.1),
        "share of graph audits that recompute the whole task (0 to 1); the others check the "
        "matmuls' values by Freivalds and recompute the rest")(
        "registrations-per-hour", po::value<int>()->default_value(20),
        "new volunteer identities admitted per network address per hour")(
        "volunteers", po::value<std::string>()->default_value("open"),
        "'open': any volunteer works; 'approved': only those lab staff approved")(
        "max-graph-task-mb", po::value<std::int64_t>()->default_value(4096),
        "largest graph task (all its values at once), MiB")(
        "audit-retention-hours", po::value<double>()->default_value(168.0),
        "keep a released graph job's data this long after it finished, so the node can recheck "
        "it if a volunteer it used is quarantined later (0: delete at release)");
    try {
        std::vector<std::string> args(argv + 1, argv + argc);
        if (args.empty() || args[0] == "--help" || args[0] == "-h") {
            printUsage(serveOptions);
            return args.empty() ? 2 : 0;
        }
        po::options_description all("all");
        all.add(serveOptions)
            .add_options()("email", po::value<std::string>())("volunteer",
                                                              po::value<std::string>());
        po::positional_options_description positional;
        std::vector<std::string> rest;
        std::string command = args[0];
        if (command == "researcher") {
            if (args.size() < 3 || args[1] != "add")
                throw std::runtime_error("usage: goblin-labnode researcher add EMAIL --db PATH");
            rest.assign(args.begin() + 2, args.end());
            positional.add("email", 1);
        } else if (command == "volunteer") {
            if (args.size() < 2 || (args[1] != "list" && args[1] != "approve"))
                throw std::runtime_error(
                    "usage: goblin-labnode volunteer list|approve [ID] --db PATH");
            rest.assign(args.begin() + 2, args.end());
            positional.add("volunteer", 1);
        } else if (command == "serve") {
            rest.assign(args.begin() + 1, args.end());
        } else {
            throw std::runtime_error("unknown command '" + command +
                                     "' (serve, researcher add, volunteer list|approve)");
        }
        po::variables_map options;
        po::store(po::command_line_parser(rest).options(all).positional(positional).run(), options);
        po::notify(options);
        if (!options.count("db"))
            throw std::runtime_error("--db PATH is required");
        if (command == "volunteer")
            return volunteerCommand(args[1], options);
        return command == "serve" ? serve(options) : researcherAdd(options);
    } catch (const std::exception& error) {
        std::cerr << "goblin-labnode: " << error.what() << std::endl;
        return 1;
    }
}
