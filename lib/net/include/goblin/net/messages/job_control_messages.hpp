// Typed messages with which a researcher manages its jobs (docs/protocol.md, "Cancelling and
// listing jobs"): cancel and its reply, list_jobs and its reply. Builders write the
// exact wire fields; parsers validate every field of a hostile control object. Pure functions on
// values; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// → {"type":"cancel","id","job"}: stop a job of this researcher.
struct Cancel {
    std::int64_t id = 0;
    std::string job;
};

// ← {"type":"cancelled","id","job","state"}: the job's state after the cancel ("cancelled").
struct Cancelled {
    std::int64_t id = 0;
    std::string job;
    std::string state;
};

// → {"type":"list_jobs","id"}: the asking researcher's own jobs.
struct ListJobs {
    std::int64_t id = 0;
};

// One job of a job_list: `done` of `total` tasks (rounds for a training job); `created` in
// seconds since the epoch.
struct JobListEntry {
    std::string job;
    std::string kind; // matmul, graph, train
    std::string state;
    std::int64_t done = 0;
    std::int64_t total = 0;
    double created = 0;
};

// ← {"type":"job_list","id","jobs":[{"job","kind","state","done","total","created"}, …]}, newest
// first, at most kMaxListedJobs.
struct JobList {
    std::int64_t id = 0;
    std::vector<JobListEntry> jobs;
};
inline constexpr std::size_t kMaxListedJobs = 1000;

Message toMessage(const Cancel& cancel);
Message toMessage(const Cancelled& cancelled);
Message toMessage(const ListJobs& list);
Message toMessage(const JobList& list);

// Errors are InvalidMessage naming the field; a request's "id" is optional (0 when absent).
[[nodiscard]] Expected<Cancel> parseCancel(const boost::json::object& control);
[[nodiscard]] Expected<Cancelled> parseCancelled(const boost::json::object& control);
[[nodiscard]] Expected<ListJobs> parseListJobs(const boost::json::object& control);
[[nodiscard]] Expected<JobList> parseJobList(const boost::json::object& control);

} // namespace goblin::net
