#include "goblin/net/messages/quota_messages.hpp"

#include <cmath>
#include <limits>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

// A finite number ≥ 0 (an integer on the wire is taken too).
Expected<double> requireAmount(const json::object& control, std::string_view key) {
    auto value = requireNumber(control, key);
    if (!value)
        return value;
    if (!std::isfinite(*value) || *value < 0)
        return invalid(detail::joined({"'", key, "' must be a finite number >= 0"}));
    return value;
}

} // namespace

Message toMessage(const CheckQuota& check) {
    json::object control = detail::controlOf(MessageType::CheckQuota);
    control["id"] = check.id;
    control["kind"] = check.kind;
    control["bytes"] = check.bytes;
    if (check.flops)
        control["flops"] = *check.flops;
    return Message{std::move(control), {}};
}

Message toMessage(const Quota& quota) {
    json::object control = detail::controlOf(MessageType::Quota);
    control["id"] = quota.id;
    control["max_bytes"] = quota.maxBytes;
    control["max_flops"] = quota.maxFlops;
    control["max_running_jobs"] = quota.maxRunningJobs;
    control["running_jobs"] = quota.runningJobs;
    return Message{std::move(control), {}};
}

Expected<CheckQuota> parseCheckQuota(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::CheckQuota); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    auto kind = detail::requireName(control, "kind");
    if (!kind)
        return tl::unexpected(kind.error());
    auto bytes = requireIntIn(control, "bytes", 0, std::numeric_limits<std::int64_t>::max());
    if (!bytes)
        return tl::unexpected(bytes.error());
    CheckQuota check{*id, std::move(*kind), *bytes, std::nullopt};
    if (control.contains("flops") && !control.at("flops").is_null()) {
        auto flops = requireAmount(control, "flops");
        if (!flops)
            return tl::unexpected(flops.error());
        check.flops = *flops;
    }
    return check;
}

Expected<Quota> parseQuota(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::Quota); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    auto maxBytes = requireIntIn(control, "max_bytes", 0, kMax);
    auto maxFlops = requireAmount(control, "max_flops");
    auto maxRunning = requireIntIn(control, "max_running_jobs", 0, kMax);
    auto running = requireIntIn(control, "running_jobs", 0, kMax);
    if (!maxBytes)
        return tl::unexpected(maxBytes.error());
    if (!maxFlops)
        return tl::unexpected(maxFlops.error());
    if (!maxRunning)
        return tl::unexpected(maxRunning.error());
    if (!running)
        return tl::unexpected(running.error());
    return Quota{*id, *maxBytes, *maxFlops, *maxRunning, *running};
}

} // namespace goblin::net
