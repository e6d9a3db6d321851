#include "staff/researcher_commands.hpp"

#include <iostream>
#include <stdexcept>

#include <boost/json.hpp>

#include "node/secrets.hpp"
#include "staff/email_address.hpp"
#include "staff/json_output.hpp"
#include "staff/quota_commands.hpp"
#include "staff/staff_cli.hpp"
#include "store/node_store.hpp"
#include "store/researcher_book.hpp"

namespace po = boost::program_options;

namespace goblin::labnode {
namespace {

const CommandUsage kAddUsage{
    "goblin-labnode researcher add EMAIL --db PATH [--rotate]",
    "Creates a researcher's credential and prints its token (once; only its hash is stored).\n"
    "An e-mail that already has an active credential is refused unless --rotate, which issues a\n"
    "new token and revokes the old one (connections open with it stay open until they close)."};
const CommandUsage kListUsage{"goblin-labnode researchers list --db PATH [--json]",
                              "Lists researchers: e-mail, created, whether their credential is "
                              "active."};
const CommandUsage kRevokeUsage{
    "goblin-labnode researchers revoke EMAIL --db PATH",
    "Revokes a researcher's credential: the node refuses it at the next hello (connections open\n"
    "now stay open until they close). `researcher add EMAIL` issues a new one."};

std::string emailArgument(const po::variables_map& options, const CommandUsage& usage) {
    if (!options.count("email")) {
        std::string message = "usage: ";
        message.append(usage.synopsis);
        throw std::runtime_error(message);
    }
    auto email = normalizeEmail(options["email"].as<std::string>());
    if (!email)
        throw std::runtime_error(email.error().message);
    return *email;
}

int add(const std::vector<std::string>& args) {
    po::options_description options("options");
    options.add_options()("email", po::value<std::string>(), "the researcher's e-mail address")(
        "rotate", "replace an existing credential's token (the old one stops working)");
    po::positional_options_description positional;
    positional.add("email", 1);
    const auto parsed = parseCommand(args, options, positional, kAddUsage);
    if (!parsed)
        return 0;
    const std::string email = emailArgument(*parsed, kAddUsage);
    NodeStore store(existingDatabase(*parsed));
    const std::string token = newSecret();
    const CredentialChange change =
        parsed->count("rotate") ? CredentialChange::Rotate : CredentialChange::New;
    if (auto id = issueResearcherCredential(store.database(), email, hashSecret(token), change,
                                            wallClock());
        !id)
        throw std::runtime_error(id.error().message);
    std::cout << token << std::endl;
    return 0;
}

int list(const std::vector<std::string>& args) {
    po::options_description options("options");
    addJsonOption(options);
    const auto parsed = parseCommand(args, options, {}, kListUsage);
    if (!parsed)
        return 0;
    NodeStore store(existingDatabase(*parsed));
    const auto researchers = listResearchers(store.database());
    if (wantsJson(*parsed)) {
        boost::json::array rows;
        for (const ResearcherListing& researcher : researchers)
            rows.push_back({{"email", researcher.email},
                            {"created", jsonTime(researcher.createdAt)},
                            {"active", researcher.active},
                            {"revoked", researcher.active ? boost::json::value(nullptr)
                                                          : jsonTime(researcher.revokedAt)}});
        printJson(rows);
        return 0;
    }
    std::cout << "EMAIL\tCREATED\tCREDENTIAL\n";
    for (const ResearcherListing& researcher : researchers) {
        std::cout << researcher.email << '\t' << utcTime(researcher.createdAt) << '\t';
        if (researcher.active)
            std::cout << "active\n";
        else
            std::cout << "revoked " << utcTime(researcher.revokedAt) << '\n';
    }
    std::cout << groupedNumber(static_cast<std::int64_t>(researchers.size())) << " researcher"
              << (researchers.size() == 1 ? "" : "s") << std::endl;
    return 0;
}

int revoke(const std::vector<std::string>& args) {
    po::options_description options("options");
    options.add_options()("email", po::value<std::string>(), "the researcher's e-mail address");
    po::positional_options_description positional;
    positional.add("email", 1);
    const auto parsed = parseCommand(args, options, positional, kRevokeUsage);
    if (!parsed)
        return 0;
    const std::string email = emailArgument(*parsed, kRevokeUsage);
    NodeStore store(existingDatabase(*parsed));
    if (auto ok = revokeResearcher(store.database(), email, wallClock()); !ok)
        throw std::runtime_error(ok.error().message);
    std::cout << "revoked " << email << std::endl;
    return 0;
}

} // namespace

int researcherCommand(const std::vector<std::string>& args) {
    return runStaffAction(args, "researcher",
                          {{"add", &kAddUsage, add},
                           {"list", &kListUsage, list},
                           {"revoke", &kRevokeUsage, revoke},
                           {"quota", &kQuotaUsage, quotaCommand}});
}

} // namespace goblin::labnode
