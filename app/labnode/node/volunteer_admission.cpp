#include "node/volunteer_admission.hpp"

#include "goblin/net/json_fields.hpp"
#include "node/secrets.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

bool listsOp(const json::array& ops, std::string_view name) {
    for (const auto& op : ops) {
        if (op.is_string() && op.get_string() == name)
            return true;
    }
    return false;
}

} // namespace

Expected<VolunteerCapabilities> parseCapabilities(const json::object& hello) {
    const auto* capabilities = hello.if_contains("capabilities");
    if (!capabilities || !capabilities->is_object())
        return makeError(ErrorCode::InvalidMessage, "hello needs a 'capabilities' object");
    const json::object& caps = capabilities->get_object();
    auto backend = net::requireString(caps, "backend");
    auto slots = net::requireIntIn(caps, "slots", 1, 16);
    auto memory = net::requireIntIn(caps, "memory_bytes", 0, INT64_MAX);
    if (!backend || backend->empty() || backend->size() > 64)
        return makeError(ErrorCode::InvalidMessage, "capabilities.backend must be a short string");
    if (!slots)
        return tl::unexpected(slots.error());
    if (!memory)
        return tl::unexpected(memory.error());
    const auto* dtypes = caps.if_contains("dtypes");
    const auto* ops = caps.if_contains("ops");
    if (!dtypes || !dtypes->is_array() || !ops || !ops->is_array())
        return makeError(ErrorCode::InvalidMessage, "capabilities need 'dtypes' and 'ops' lists");
    if (!listsOp(ops->get_array(), "matmul"))
        return makeError(ErrorCode::VersionMismatch, "the volunteer does not run 'matmul'");
    VolunteerCapabilities parsed{
        *backend, static_cast<int>(*slots), *memory, {}, listsOp(ops->get_array(), "graph")};
    if (caps.contains("input_cache_bytes")) {
        auto cache = net::requireIntIn(caps, "input_cache_bytes", 0, INT64_MAX);
        if (!cache)
            return tl::unexpected(cache.error());
        parsed.inputCacheBytes = *cache;
    }
    for (const auto& dtype : dtypes->get_array()) {
        if (dtype.is_string() && parsed.dtypes.size() < 8)
            parsed.dtypes.insert(std::string(dtype.get_string()));
    }
    return parsed;
}

Expected<Admission> admitVolunteer(const json::object& hello, NodeStore& store,
                                   core::RandomSource& random, double now) {
    const auto* identity = hello.if_contains("identity");
    if (!identity || identity->is_null()) {
        Admission admission{randomId("v-", random), newSecret()};
        if (auto ok =
                store.addVolunteer(admission.volunteerId, hashSecret(*admission.newSecret), now);
            !ok)
            return tl::unexpected(ok.error());
        return admission;
    }
    if (!identity->is_object())
        return makeError(ErrorCode::InvalidMessage, "identity must be an object or null");
    auto volunteerId = net::requireString(identity->get_object(), "volunteer");
    auto secret = net::requireString(identity->get_object(), "secret");
    if (!volunteerId || !secret)
        return makeError(ErrorCode::Unauthenticated, "identity needs 'volunteer' and 'secret'");
    auto record = store.volunteer(*volunteerId);
    if (!record || record->secretHash != hashSecret(*secret))
        return makeError(ErrorCode::Unauthenticated, "unknown volunteer or wrong secret");
    if (record->banned)
        return makeError(ErrorCode::Banned, "this volunteer is banned by the lab");
    return Admission{*volunteerId, std::nullopt};
}

} // namespace goblin::labnode
