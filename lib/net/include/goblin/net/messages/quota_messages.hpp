// Typed messages with which a researcher checks a job against its quota before uploading it
// (docs/protocol.md, "Quotas"): check_quota and its reply, quota. Builders write the exact wire
// fields; parsers validate every field of a hostile control object. Pure functions on values;
// safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// → {"type":"check_quota","id","kind","bytes"[,"flops"]}: a job of `kind` would upload `bytes`
// and compute about `flops` (absent: the client cannot tell).
struct CheckQuota {
    std::int64_t id = 0;
    std::string kind; // matmul, graph, train
    std::int64_t bytes = 0;
    std::optional<double> flops;
};

// ← {"type":"quota","id","max_bytes","max_flops","max_running_jobs","running_jobs"}: the job fits
// the researcher's quota; its limits and the researcher's running jobs now.
struct Quota {
    std::int64_t id = 0;
    std::int64_t maxBytes = 0;
    double maxFlops = 0;
    std::int64_t maxRunningJobs = 0;
    std::int64_t runningJobs = 0;
};

Message toMessage(const CheckQuota& check);
Message toMessage(const Quota& quota);

// Errors are InvalidMessage naming the field; a request's "id" is optional (0 when absent).
[[nodiscard]] Expected<CheckQuota> parseCheckQuota(const boost::json::object& control);
[[nodiscard]] Expected<Quota> parseQuota(const boost::json::object& control);

} // namespace goblin::net
