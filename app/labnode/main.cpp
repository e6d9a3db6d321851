// goblin-labnode: the composition root. `serve` builds the store, blob store, coordinator and
// WebSocket server and runs their threads; the staff commands (init, researchers, volunteers) are
// dispatched to their own files.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/program_options.hpp>

#include "access/access_app.hpp"
#include "access/access_form.hpp"
#include "access/request_commands.hpp"
#include "access/smtp_code_mailer.hpp"
#include "goblin/core/bulk_memory.hpp"
#include "goblin/net/tls_context.hpp"
#include "goblin/net/ws_server.hpp"
#include "http/node_http.hpp"
#include "http/node_snapshot.hpp"
#include "node/coordinator.hpp"
#include "node/log_level.hpp"
#include "node/node_connection.hpp"
#include "node/node_lock.hpp"
#include "staff/data_folder.hpp"
#include "staff/job_commands.hpp"
#include "staff/researcher_commands.hpp"
#include "staff/serve_options.hpp"
#include "staff/staff_cli.hpp"
#include "staff/volunteer_commands.hpp"
#include "store/admission_store.hpp"
#include "store/blob_store.hpp"
#include "store/node_settings.hpp"
#include "store/node_store.hpp"

namespace asio = boost::asio;
namespace po = boost::program_options;
using namespace goblin;
using namespace goblin::labnode;

namespace {

std::mutex logMutex;

void logAt(LogLevel level, const std::string& line) {
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::lock_guard lock(logMutex);
    std::cout << stamp << ' ' << logLevelName(level) << ' ' << line << std::endl;
}

void logLine(const std::string& line) {
    logAt(LogLevel::Info, line);
}

// The server logs only what it refused (a plain client on the TLS port, a failed handshake).
void logRefusal(const std::string& line) {
    logAt(LogLevel::Warning, line);
}

std::pair<std::string, unsigned short> splitHostPort(const std::string& listen) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos)
        throw std::runtime_error("--listen wants HOST:PORT, got '" + listen + "'");
    const std::string digits = listen.substr(colon + 1);
    const bool numeric =
        !digits.empty() && digits.size() <= 5 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!numeric || std::stoi(digits) > 65535)
        throw std::runtime_error("--listen port must be between 0 and 65535 (got '" + listen +
                                 "')");
    return {listen.substr(0, colon), static_cast<unsigned short>(std::stoi(digits))};
}

// The address the credential page gives for goblin.connect: --public-url; else, over plain ws://,
// the one address the node listens on. A node on every address (0.0.0.0, ::) or serving TLS (whose
// certificate names a host, not the bound address) gives the Host field each browser sent, with
// this machine's name as the fallback.
void setConnectUrls(access::AccessSettings& settings, const po::variables_map& options,
                    const std::string& host, unsigned short port) {
    const std::string scheme = settings.secureCookies ? "wss://" : "ws://";
    const std::string portText = ":" + std::to_string(port);
    const auto address = asio::ip::make_address(host);
    const std::string shownHost = address.is_v6() ? "[" + host + "]" : host;
    settings.fallbackUrl = scheme + asio::ip::host_name() + portText;
    if (options.count("public-url"))
        settings.connectUrl = options["public-url"].as<std::string>();
    else if (!address.is_unspecified() && !settings.secureCookies)
        settings.connectUrl = scheme + shownHost + portText;
}

// One node per database and data folder: a second `serve` stops here, before it reads anything.
std::vector<NodeLock> lockNode(const std::string& dbPath, const std::filesystem::path& dataDir) {
    std::vector<NodeLock> locks;
    std::string guarded = "database ";
    guarded.append(dbPath);
    auto dbLock = NodeLock::acquire(dbPath + ".lock", guarded);
    if (!dbLock)
        throw std::runtime_error(dbLock.error().message);
    locks.push_back(std::move(*dbLock));
    std::filesystem::create_directories(dataDir);
    guarded = "data directory ";
    guarded.append(dataDir.string());
    auto dataLock = NodeLock::acquire(dataDir / ".lock", guarded);
    if (!dataLock)
        throw std::runtime_error(dataLock.error().message);
    locks.push_back(std::move(*dataLock));
    return locks;
}

// --tls-cert and --tls-key together: the node serves wss:// and https:// only; neither: plain.
net::TlsContext serverTls(const po::variables_map& options) {
    if (!options.count("tls-cert") && !options.count("tls-key"))
        return nullptr;
    if (!options.count("tls-cert") || !options.count("tls-key"))
        throw std::runtime_error("--tls-cert PEM and --tls-key PEM go together");
    auto context = net::makeServerTlsContext(options["tls-cert"].as<std::string>(),
                                             options["tls-key"].as<std::string>());
    if (!context)
        throw std::runtime_error(context.error().message);
    return *context;
}

// --smtp-url names the relay that mails sign-in codes; without one they go to a file staff read.
std::unique_ptr<access::CodeMailer> codeMailer(const po::variables_map& options,
                                               const std::filesystem::path& dataDir) {
    if (options.count("smtp-url"))
        return std::make_unique<access::SmtpCodeMailer>(options["smtp-url"].as<std::string>(),
                                                        options["smtp-from"].as<std::string>());
    return std::make_unique<access::FileCodeMailer>(dataDir / access::kCodeFileName);
}

int serve(const po::variables_map& options) {
    core::keepHeapMapped();
    const std::string dbPath = existingDatabase(options);
    const net::TlsContext tls = serverTls(options);
    const auto [host, port] = splitHostPort(options["listen"].as<std::string>());
    const DataFolderChoice dataChoice =
        options.count("data-dir")
            ? DataFolderChoice{options["data-dir"].as<std::string>(), "--data-dir"}
            : defaultDataFolder(dbPath);
    const std::filesystem::path dataDir = dataChoice.path;
    std::vector<NodeLock> locks = lockNode(dbPath, dataDir);
    if (!options.count("data-dir"))
        if (auto claimed = claimDataFolder(dataDir, dbPath); !claimed)
            throw std::runtime_error(claimed.error().message);
    NodeStore store(dbPath);
    BlobStore blobs(dataDir);

    CoordinatorSettings settings;
    settings.leaseSeconds = options["lease-seconds"].as<double>();
    // Every value was range-checked by readServeCommand (checkServeOptions).
    settings.maxTaskExpiries = options["max-task-expiries"].as<int>();
    settings.maxGraphTaskBytes = options["max-graph-task-mb"].as<std::int64_t>() << 20;
    settings.planVolunteerBytes = options["plan-volunteer-mb"].as<std::int64_t>() << 20;
    settings.trust.auditFloor = options["audit-floor"].as<double>();
    settings.trust.probationAudits = options["probation-audits"].as<std::int64_t>();
    settings.trust.sharedAddressRate = options["shared-address-audit-rate"].as<double>();
    settings.trust.fullAuditShare = options["full-audit-share"].as<double>();
    settings.registrationsPerHour = options["registrations-per-hour"].as<int>();
    const std::string policy = options["volunteers"].as<std::string>();
    settings.volunteers = policy == "approved" ? VolunteerPolicy::Approved : VolunteerPolicy::Open;
    // `volunteers list` reads the mode to say what an unapproved volunteer's state means.
    if (auto recorded = setNodeSetting(store.database(), kVolunteerPolicySetting, policy);
        !recorded)
        throw std::runtime_error(recorded.error().message);
    settings.limits.maxTensorBytes =
        static_cast<std::size_t>(options["max-tensor-mb"].as<std::int64_t>()) << 20;
    settings.auditRetentionSeconds = options["audit-retention-hours"].as<double>() * 3600.0;
    settings.secondOpinionWaitSeconds = options["second-opinion-seconds"].as<double>();
    settings.retainSeconds = options["retain-hours"].as<double>() * 3600.0;

    const int networkThreads = options["threads"].as<int>();
    asio::io_context network(networkThreads);
    asio::io_context core(1);
    asio::thread_pool workers(std::max(2u, std::thread::hardware_concurrency()));
    auto coreWork = asio::make_work_guard(core);
    core::SecureRandom random;

    Coordinator coordinator(
        NodeContext{core, workers, store, blobs, wallClock, NodeLog(logAt), random}, settings);
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
    // /healthz, /metrics, /status and the dashboard are computed on core, next to the database
    // they read.
    NodeHttp pages(
        store.database(),
        [&] {
            return takeSnapshot(store.database(), coordinator.peers(), coordinator.scheduler());
        },
        HealthProbe(store.database(), dataDir),
        [] {
            return std::chrono::duration<double>(
                       std::chrono::steady_clock::now().time_since_epoch())
                .count();
        });
    pages.describeProcess(GOBLIN_VERSION, wallClock);
    coordinator.watchVerdicts([&pages](const VerdictRecord& verdict) {
        pages.countVerdict(verdict.kind, verdict.accepted);
    });
    // Chart.js comes from Debian's libjs-chart.js; without it the dashboard shows no charts.
    auto chartJs = readChartJs();
    if (!chartJs)
        logRefusal("dashboard charts unavailable: " + chartJs.error().message);
    pages.serveDashboard(DashboardPage(chartJs ? std::move(*chartJs) : std::string()));
    // /access: researchers ask for access (sign-in codes by mail, the request form, the
    // credential shown once); staff decide with `goblin-labnode requests`.
    const std::string accessPolicy = options["access-requests"].as<std::string>();
    const std::unique_ptr<access::CodeMailer> mailer = codeMailer(options, dataDir);
    server->listen(host, port);
    access::AccessSettings accessSettings;
    accessSettings.secureCookies = tls != nullptr;
    setConnectUrls(accessSettings, options, host, server->port());
    access::AccessApp accessApp(store.database(), wallClock, random, *mailer, NodeLog(logAt),
                                accessSettings);
    if (accessPolicy == "on")
        pages.serveAccess(&accessApp);
    server->setHttpRequestHandler(
        [&core, &pages](net::HttpRequest request, net::HttpReply reply) {
            asio::post(core,
                       [&pages, request = std::move(request), reply = std::move(reply)]() mutable {
                           pages.handle(request, std::move(reply));
                       });
        },
        access::kMaxFormBodyBytes);
    auto traffic = std::make_shared<net::TrafficCounters>();
    server->setTrafficCounters(traffic);
    server->setTls(tls);
    server->setLog(logRefusal);
    pages.countTraffic(traffic);
    // Before the "listening" line: a SIGTERM right after it (a test, a service manager) is a clean
    // shutdown, not the default action. The handler runs once network.run() does.
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
    {
        std::lock_guard lock(logMutex);
        std::cout << "goblin-labnode listening on " << host << ":" << server->port() << std::endl;
    }
    std::string owner = "listening on ";
    owner.append(host).append(":").append(std::to_string(server->port()));
    for (NodeLock& lock : locks)
        lock.describe(nodeOwnerDescription(owner));
    logLine("database " + dbPath + ", data directory " + dataDir.string());
    if (!options.count("data-dir"))
        logLine("data directory " + dataDir.string() + " (" + dataChoice.why + ")");
    if (accessPolicy == "on") {
        std::string line = "access requests on /access: ";
        logLine(line.append(mailer->describe()));
        line = "access: a new credential's page gives goblin.connect the address ";
        logLine(line.append(accessSettings.connectUrl.empty()
                                ? "the browser used (TLS, or --listen on every address; "
                                  "--public-url sets one)"
                                : accessSettings.connectUrl));
    }
    if (tls) {
        std::string line = "TLS: serving wss:// and https:// only, certificate ";
        logLine(line.append(options["tls-cert"].as<std::string>()));
    }
    if (settings.trust.auditFloor == 0.0 && settings.trust.probationAudits == 0)
        logRefusal("WARNING: graph audits are off (--audit-floor 0 --probation-audits 0): "
                   "volunteers that agree on a wrong answer are not caught");
    asio::post(core, [&coordinator] { coordinator.start(); });
    server->start();

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

const char* kUsage =
    "usage: goblin-labnode COMMAND [ARGS] --db PATH\n"
    "  init --db PATH                      create a node database\n"
    "  serve --db PATH [options]           run the lab node (one per database)\n"
    "  researcher add EMAIL [--rotate]     issue a researcher's credential (prints the token)\n"
    "  researchers list | revoke EMAIL     list researchers, revoke a credential\n"
    "  volunteers list | show ID | approve ID | ban ID --reason TEXT | unban ID\n"
    "  jobs list | show ID                 list jobs (no research data), show one\n"
    "  jobs cancel ID | purge ID           cancel a running job, delete a finished one\n"
    "  requests list | show ID | approve ID | refuse ID [--reason TEXT]\n"
    "                                      researchers' access requests (from /access)\n"
    "  status                              count jobs by state, volunteers, researchers and\n"
    "                                      pending access requests\n"
    "  (every list and show, and status, take --json: one JSON document for scripts)\n"
    "  --version                           print the version\n"
    "`goblin-labnode COMMAND --help` describes a command.\n\n";

int init(const std::vector<std::string>& args) {
    const auto parsed = parseCommand(
        args, po::options_description("options"), {},
        {"goblin-labnode init --db PATH",
         "Creates a new, empty node database at PATH (refused when the file exists). Every other\n"
         "command needs a database made by init, so a mistyped --db never makes a new one."});
    if (!parsed)
        return 0;
    if (!parsed->count("db"))
        throw std::runtime_error("--db PATH is required (--help for usage)");
    const std::string path = (*parsed)["db"].as<std::string>();
    if (std::filesystem::exists(path)) {
        std::string message = path;
        message.append(" already exists (init creates a new database)");
        throw std::runtime_error(message);
    }
    NodeStore store(path);
    std::cout << "created database " << path << std::endl;
    return 0;
}

int serveCommand(const std::vector<std::string>& args) {
    const auto options = readServeCommand(args);
    return options ? serve(*options) : 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        if (args.empty()) {
            std::cerr << kUsage;
            return 2;
        }
        const std::string& command = args[0];
        const std::vector<std::string> rest(args.begin() + 1, args.end());
        if (command == "--help" || command == "-h" || command == "help") {
            std::cout << kUsage << serveOptions() << std::endl;
            return 0;
        }
        if (command == "--version") {
            std::cout << "goblin-labnode " << GOBLIN_VERSION << std::endl;
            return 0;
        }
        if (command == "init")
            return init(rest);
        if (command == "serve")
            return serveCommand(rest);
        if (command == "researcher" || command == "researchers")
            return researcherCommand(rest);
        if (command == "volunteer" || command == "volunteers")
            return volunteerCommand(rest);
        if (command == "jobs")
            return jobCommand(rest);
        if (command == "requests" || command == "request")
            return access::requestCommand(rest);
        if (command == "status")
            return statusCommand(rest);
        std::string message = "unknown command '";
        message.append(command).append("' (goblin-labnode --help lists them)");
        throw std::runtime_error(message);
    } catch (const std::exception& error) {
        std::cerr << "goblin-labnode: " << error.what() << std::endl;
        return 1;
    }
}
