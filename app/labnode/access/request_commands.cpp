#include "access/request_commands.hpp"

#include <iostream>
#include <stdexcept>

#include "access/access_requests.hpp"
#include <boost/json.hpp>

#include "access/terminal_text.hpp"
#include "staff/json_output.hpp"
#include "staff/staff_cli.hpp"
#include "store/node_store.hpp"
#include "store/researcher_book.hpp"

namespace po = boost::program_options;

namespace goblin::labnode::access {
namespace {

const CommandUsage kListUsage{
    "goblin-labnode requests list --db PATH [--state pending|approved|refused] [--json]",
    "Lists researchers' access requests (made on the node's /access pages), newest first: id,\n"
    "state, created, e-mail, name, institution, computation types."};
const CommandUsage kShowUsage{"goblin-labnode requests show ID --db PATH [--json]",
                              "Shows one access request as the researcher typed it, and its "
                              "decision."};
const CommandUsage kApproveUsage{
    "goblin-labnode requests approve ID --db PATH",
    "Approves a pending request. The researcher's credential is created the first time they\n"
    "open their request page and ask for it, and shown that once (the node keeps its hash, as\n"
    "with `researcher add`). Refused when the e-mail already has an active credential."};
const CommandUsage kRefuseUsage{"goblin-labnode requests refuse ID --db PATH [--reason TEXT]",
                                "Refuses a pending request; the reason is shown to the researcher "
                                "on their request page, where they may ask again."};

std::int64_t idArgument(const po::variables_map& options, const CommandUsage& usage) {
    if (!options.count("id")) {
        std::string message = "usage: ";
        throw std::runtime_error(message.append(usage.synopsis));
    }
    const std::string text = options["id"].as<std::string>();
    std::size_t used = 0;
    std::int64_t id = 0;
    try {
        id = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || id <= 0) {
        std::string message = "no access request ";
        throw std::runtime_error(message.append(terminalSafe(text)).append(" (ids are numbers)"));
    }
    return id;
}

std::optional<po::variables_map> parseWithId(const std::vector<std::string>& args,
                                             po::options_description options,
                                             const CommandUsage& usage) {
    options.add_options()("id", po::value<std::string>(), "the request's id");
    po::positional_options_description positional;
    positional.add("id", 1);
    return parseCommand(args, options, positional, usage);
}

boost::json::object requestJson(const AccessRequest& request) {
    boost::json::array computations;
    for (const std::string& kind : request.form.computations)
        computations.emplace_back(kind);
    return {{"id", request.id},
            {"state", request.state},
            {"email", request.email},
            {"created", jsonTime(request.createdAt)},
            {"name", request.form.name},
            {"institution", request.form.institution},
            {"computations", std::move(computations)},
            {"purpose", request.form.purpose},
            {"needs", request.form.needs},
            {"scale", request.form.scale},
            {"decided", jsonTime(request.decidedAt)},
            {"reason", request.staffNote},
            {"credential_shown", jsonTime(request.credentialShownAt)}};
}

void multiline(const std::string& label, const std::string& text) {
    std::cout << label << ":\n";
    if (text.empty()) {
        std::cout << "  -\n";
        return;
    }
    std::string safe = terminalSafe(text);
    std::size_t start = 0;
    while (start <= safe.size()) {
        const auto end = safe.find('\n', start);
        std::cout << "  " << safe.substr(start, end - start) << '\n';
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
}

int list(const std::vector<std::string>& args) {
    po::options_description options("options");
    options.add_options()("state", po::value<std::string>()->default_value("", "all"),
                          "only requests in this state (pending, approved, refused)");
    addJsonOption(options);
    const auto parsed = parseCommand(args, options, {}, kListUsage);
    if (!parsed)
        return 0;
    const std::string state = (*parsed)["state"].as<std::string>();
    if (!state.empty() && state != "pending" && state != "approved" && state != "refused")
        throw std::runtime_error("--state must be pending, approved or refused");
    NodeStore store(existingDatabase(*parsed));
    const auto requests = listAccessRequests(store.database(), state);
    if (wantsJson(*parsed)) {
        boost::json::array rows;
        for (const AccessRequest& request : requests)
            rows.push_back(requestJson(request));
        printJson(rows);
        return 0;
    }
    std::cout << "ID\tSTATE\tCREATED\tEMAIL\tNAME\tINSTITUTION\tCOMPUTATIONS\n";
    for (const AccessRequest& request : requests)
        std::cout << request.id << '\t' << request.state << '\t' << utcTime(request.createdAt)
                  << '\t' << request.email << '\t' << terminalSafe(request.form.name) << '\t'
                  << terminalSafe(request.form.institution) << '\t'
                  << joinComputations(request.form.computations) << '\n';
    std::cout << groupedNumber(static_cast<std::int64_t>(requests.size())) << " request"
              << (requests.size() == 1 ? "" : "s") << std::endl;
    return 0;
}

int show(const std::vector<std::string>& args) {
    po::options_description options("options");
    addJsonOption(options);
    const auto parsed = parseWithId(args, options, kShowUsage);
    if (!parsed)
        return 0;
    const std::int64_t id = idArgument(*parsed, kShowUsage);
    NodeStore store(existingDatabase(*parsed));
    const auto request = accessRequest(store.database(), id);
    if (!request) {
        std::string message = "no access request ";
        throw std::runtime_error(message.append(std::to_string(id)));
    }
    if (wantsJson(*parsed)) {
        printJson(requestJson(*request));
        return 0;
    }
    std::cout << "request " << request->id << "\nstate: " << request->state
              << "\ne-mail: " << request->email << "\ncreated: " << utcTime(request->createdAt)
              << "\nname: " << terminalSafe(request->form.name)
              << "\ninstitution: " << terminalSafe(request->form.institution)
              << "\ncomputation types: " << joinComputations(request->form.computations) << '\n';
    multiline("research purpose", request->form.purpose);
    multiline("what the research needs", request->form.needs);
    multiline("expected scale", request->form.scale);
    if (request->state != "pending")
        std::cout << "decided: " << utcTime(request->decidedAt) << '\n';
    if (!request->staffNote.empty())
        std::cout << "reason: " << terminalSafe(request->staffNote) << '\n';
    if (request->state == "approved" && request->credentialShownAt > 0)
        std::cout << "credential: shown " << utcTime(request->credentialShownAt) << '\n';
    else if (request->state == "approved")
        std::cout << "credential: not shown yet\n";
    std::cout.flush();
    return 0;
}

int decide(const std::vector<std::string>& args, const std::string& state) {
    po::options_description options("options");
    if (state == "refused")
        options.add_options()("reason", po::value<std::string>()->default_value("", "none"),
                              "why (shown to the researcher)");
    const CommandUsage& usage = state == "refused" ? kRefuseUsage : kApproveUsage;
    const auto parsed = parseWithId(args, options, usage);
    if (!parsed)
        return 0;
    const std::int64_t id = idArgument(*parsed, usage);
    NodeStore store(existingDatabase(*parsed));
    Database& db = store.database();
    const std::string reason =
        state == "refused" ? (*parsed)["reason"].as<std::string>() : std::string();
    if (state == "approved") {
        const auto request = accessRequest(db, id);
        if (request)
            for (const ResearcherListing& researcher : listResearchers(db))
                if (researcher.email == request->email && researcher.active)
                    throw std::runtime_error(
                        request->email +
                        " already has an active credential (researchers revoke it first, or "
                        "refuse this request)");
    }
    auto decided = decideAccessRequest(db, id, state, reason, wallClock());
    if (!decided)
        throw std::runtime_error(decided.error().message);
    std::cout << state << " request " << id << " of " << decided->email;
    if (state == "approved")
        std::cout << ": their credential is shown once on their request page (/access/request)";
    std::cout << std::endl;
    return 0;
}

} // namespace

int requestCommand(const std::vector<std::string>& args) {
    return runStaffAction(
        args, "requests",
        {{"list", &kListUsage, list},
         {"show", &kShowUsage, show},
         {"approve", &kApproveUsage, [](const auto& rest) { return decide(rest, "approved"); }},
         {"refuse", &kRefuseUsage, [](const auto& rest) { return decide(rest, "refused"); }}});
}

} // namespace goblin::labnode::access
