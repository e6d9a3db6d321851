#include "goblin/net/messages/handshake.hpp"

#include <algorithm>

#include "goblin/net/json_fields.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

constexpr std::size_t kMaxListEntries = 16;
constexpr std::size_t kMaxDtypes = 8;

// A list of short strings (dtypes, ops).
Expected<std::vector<std::string>> requireNames(const json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    if (!value || !value->is_array())
        return invalid("capabilities need 'dtypes' and 'ops' lists");
    const json::array& list = value->get_array();
    if (list.size() > kMaxListEntries)
        return invalid(detail::joined({"capabilities.", key, " has more than ",
                                       std::to_string(kMaxListEntries), " entries"}));
    std::vector<std::string> names;
    for (const json::value& entry : list) {
        if (!entry.is_string() || entry.get_string().size() > 64)
            return invalid(detail::joined({"capabilities.", key, " must hold short strings"}));
        names.emplace_back(entry.get_string());
    }
    return names;
}

json::array namesJson(const std::vector<std::string>& names) {
    json::array list;
    for (const std::string& name : names)
        list.emplace_back(name);
    return list;
}

Expected<std::size_t> requireSize(const json::object& object, std::string_view key) {
    auto value = requireIntIn(object, key, 0, INT64_MAX);
    if (!value)
        return tl::unexpected(value.error());
    return static_cast<std::size_t>(*value);
}

Expected<Limits> parseLimits(const json::object& control) {
    const auto* value = control.if_contains("limits");
    if (!value || !value->is_object())
        return invalid("welcome needs a 'limits' object");
    const json::object& limits = value->get_object();
    Limits parsed;
    auto control1 = requireSize(limits, "max_control_bytes");
    auto control2 = requireSize(limits, "max_authenticated_control_bytes");
    auto tensors = requireSize(limits, "max_tensors_per_message");
    auto tensorBytes = requireSize(limits, "max_tensor_bytes");
    auto tiles = requireIntIn(limits, "max_tiles", 0, INT64_MAX);
    for (const Expected<std::size_t>* field : {&control1, &control2, &tensors, &tensorBytes})
        if (!*field)
            return tl::unexpected(field->error());
    if (!tiles)
        return tl::unexpected(tiles.error());
    parsed.maxControlBytes = *control1;
    parsed.maxAuthenticatedControlBytes = *control2;
    parsed.maxTensorsPerMessage = *tensors;
    parsed.maxTensorBytes = *tensorBytes;
    parsed.maxTiles = *tiles;
    return parsed;
}

// id, protocol and catalog, read the same way by every hello and welcome.
struct VersionFields {
    std::int64_t id = 0;
    std::int64_t protocol = 0;
    std::int64_t catalog = 0;
};

Expected<VersionFields> parseVersionFields(const json::object& control, MessageType type) {
    if (auto ok = detail::requireType(control, type); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    auto protocol = requireInt(control, "protocol");
    auto catalog = requireInt(control, "catalog");
    if (!id)
        return tl::unexpected(id.error());
    if (!protocol)
        return tl::unexpected(protocol.error());
    if (!catalog)
        return tl::unexpected(catalog.error());
    return VersionFields{*id, *protocol, *catalog};
}

Expected<std::optional<VolunteerIdentity>> parseIdentity(const json::object& control) {
    const auto* identity = control.if_contains("identity");
    if (!identity || identity->is_null())
        return std::optional<VolunteerIdentity>();
    if (!identity->is_object())
        return invalid("identity must be an object or null");
    auto volunteer = detail::requireName(identity->get_object(), "volunteer");
    auto secret = detail::requireName(identity->get_object(), "secret");
    if (!volunteer || !secret)
        return makeError(ErrorCode::Unauthenticated, "identity needs 'volunteer' and 'secret'");
    return std::optional(VolunteerIdentity{std::move(*volunteer), std::move(*secret)});
}

} // namespace

bool Capabilities::runs(std::string_view op) const {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

bool Capabilities::takes(std::string_view dtype) const {
    return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

Expected<HelloVersions> parseHelloVersions(const json::object& hello) {
    auto protocol = requireInt(hello, "protocol");
    auto catalog = requireInt(hello, "catalog");
    if (!protocol || !catalog || *protocol < kOldestProtocolVersion ||
        *protocol > kProtocolVersion || *catalog < kMatmulCatalogVersion ||
        *catalog > kCatalogVersion)
        return makeError(
            ErrorCode::VersionMismatch,
            detail::joined({"this node speaks protocols ", std::to_string(kOldestProtocolVersion),
                            " to ", std::to_string(kProtocolVersion), " with catalogs ",
                            std::to_string(kMatmulCatalogVersion), " to ",
                            std::to_string(kCatalogVersion)}));
    return HelloVersions{*protocol, *catalog};
}

json::object limitsJson(const Limits& limits) {
    return json::object{{"max_control_bytes", limits.maxControlBytes},
                        {"max_authenticated_control_bytes", limits.maxAuthenticatedControlBytes},
                        {"max_tensors_per_message", limits.maxTensorsPerMessage},
                        {"max_tensor_bytes", limits.maxTensorBytes},
                        {"max_tiles", limits.maxTiles}};
}

Message toMessage(const ResearcherHello& hello) {
    json::object control = detail::controlOf(MessageType::Hello);
    control["id"] = hello.id;
    control["protocol"] = hello.protocol;
    control["catalog"] = hello.catalog;
    control["token"] = hello.token;
    return Message{std::move(control), {}};
}

Message toMessage(const VolunteerHello& hello) {
    const Capabilities& caps = hello.capabilities;
    json::object control = detail::controlOf(MessageType::Hello);
    control["id"] = hello.id;
    control["protocol"] = hello.protocol;
    control["catalog"] = hello.catalog;
    if (hello.identity)
        control["identity"] = json::object{{"volunteer", hello.identity->volunteerId},
                                           {"secret", hello.identity->secret}};
    else
        control["identity"] = nullptr;
    control["capabilities"] =
        json::object{{"backend", caps.backend},          {"threads", caps.threads},
                     {"memory_bytes", caps.memoryBytes}, {"dtypes", namesJson(caps.dtypes)},
                     {"ops", namesJson(caps.ops)},       {"slots", caps.slots},
                     {"devices", caps.devices}};
    if (caps.inputCacheBytes > 0)
        control["capabilities"].as_object()["input_cache_bytes"] = caps.inputCacheBytes;
    return Message{std::move(control), {}};
}

Message toMessage(const Welcome& welcome) {
    json::object control = detail::controlOf(MessageType::Welcome);
    control["id"] = welcome.id;
    control["protocol"] = welcome.protocol;
    control["catalog"] = welcome.catalog;
    control["limits"] = limitsJson(welcome.limits);
    if (welcome.secret)
        control["secret"] = *welcome.secret;
    if (welcome.volunteerId)
        control["volunteer"] = *welcome.volunteerId;
    return Message{std::move(control), {}};
}

Message toMessage(const ErrorReply& reply) {
    json::object control = detail::controlOf(MessageType::Error);
    control["id"] = reply.id;
    control["code"] = wireName(reply.error.code);
    control["message"] = reply.error.message;
    return Message{std::move(control), {}};
}

Expected<ResearcherHello> parseResearcherHello(const json::object& control) {
    auto fields = parseVersionFields(control, MessageType::Hello);
    if (!fields)
        return tl::unexpected(fields.error());
    ResearcherHello hello{fields->id, fields->protocol, fields->catalog, {}};
    if (control.contains("token")) {
        auto token = detail::requireName(control, "token");
        if (!token)
            return makeError(ErrorCode::Unauthenticated, token.error().message);
        hello.token = std::move(*token);
    }
    return hello;
}

Expected<Capabilities> parseCapabilities(const json::object& caps) {
    Capabilities parsed;
    auto backend = requireString(caps, "backend");
    if (!backend || backend->empty() || backend->size() > 64)
        return invalid("capabilities.backend must be a short string");
    auto slots = requireIntIn(caps, "slots", 1, 16);
    if (!slots)
        return tl::unexpected(slots.error());
    auto memory = requireIntIn(caps, "memory_bytes", 0, INT64_MAX);
    if (!memory)
        return tl::unexpected(memory.error());
    if (caps.contains("threads")) {
        auto threads = requireIntIn(caps, "threads", 0, 1 << 16);
        if (!threads)
            return tl::unexpected(threads.error());
        parsed.threads = *threads;
    }
    if (caps.contains("input_cache_bytes")) {
        auto cache = requireIntIn(caps, "input_cache_bytes", 0, INT64_MAX);
        if (!cache)
            return tl::unexpected(cache.error());
        parsed.inputCacheBytes = *cache;
    }
    auto dtypes = requireNames(caps, "dtypes");
    if (!dtypes)
        return tl::unexpected(dtypes.error());
    auto ops = requireNames(caps, "ops");
    if (!ops)
        return tl::unexpected(ops.error());
    if (const auto* devices = caps.if_contains("devices")) {
        if (!devices->is_array() || devices->get_array().size() > kMaxListEntries)
            return invalid("capabilities.devices must be a list of at most " +
                           std::to_string(kMaxListEntries) + " entries");
        parsed.devices = devices->get_array();
    }
    parsed.backend = std::move(*backend);
    parsed.slots = *slots;
    parsed.memoryBytes = *memory;
    parsed.dtypes = std::move(*dtypes);
    if (parsed.dtypes.size() > kMaxDtypes)
        parsed.dtypes.resize(kMaxDtypes);
    parsed.ops = std::move(*ops);
    return parsed;
}

Expected<VolunteerHello> parseVolunteerHello(const json::object& control) {
    auto fields = parseVersionFields(control, MessageType::Hello);
    if (!fields)
        return tl::unexpected(fields.error());
    auto identity = parseIdentity(control);
    if (!identity)
        return tl::unexpected(identity.error());
    const auto* caps = control.if_contains("capabilities");
    if (!caps || !caps->is_object())
        return invalid("hello needs a 'capabilities' object");
    auto capabilities = parseCapabilities(caps->get_object());
    if (!capabilities)
        return tl::unexpected(capabilities.error());
    return VolunteerHello{fields->id, fields->protocol, fields->catalog, std::move(*identity),
                          std::move(*capabilities)};
}

Expected<Welcome> parseWelcome(const json::object& control) {
    auto fields = parseVersionFields(control, MessageType::Welcome);
    if (!fields)
        return tl::unexpected(fields.error());
    auto limits = parseLimits(control);
    if (!limits)
        return tl::unexpected(limits.error());
    Welcome welcome{fields->id, fields->protocol, fields->catalog, *limits, {}, {}};
    for (auto [key, target] :
         {std::pair{"volunteer", &welcome.volunteerId}, std::pair{"secret", &welcome.secret}}) {
        if (!control.contains(key))
            continue;
        auto value = detail::requireName(control, key);
        if (!value || value->empty())
            return invalid(detail::joined({"field '", key, "' must be a non-empty short string"}));
        *target = std::move(*value);
    }
    return welcome;
}

Expected<ErrorReply> parseErrorReply(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::Error); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    auto error = detail::requireError(control);
    if (!error)
        return tl::unexpected(error.error());
    return ErrorReply{*id, std::move(*error)};
}

} // namespace goblin::net
