#include "goblin/net/messages/job_control_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

Expected<JobListEntry> parseEntry(const json::value& value) {
    if (!value.is_object())
        return invalid("every entry of 'jobs' must be an object");
    const json::object& entry = value.get_object();
    auto job = detail::requireName(entry, "job");
    auto kind = detail::requireName(entry, "kind");
    auto state = detail::requireName(entry, "state");
    auto done = requireIntIn(entry, "done", 0, INT64_MAX);
    auto total = requireIntIn(entry, "total", 0, INT64_MAX);
    auto created = requireNumber(entry, "created");
    if (!job)
        return tl::unexpected(job.error());
    if (!kind)
        return tl::unexpected(kind.error());
    if (!state)
        return tl::unexpected(state.error());
    if (!done)
        return tl::unexpected(done.error());
    if (!total)
        return tl::unexpected(total.error());
    if (!created)
        return tl::unexpected(created.error());
    return JobListEntry{std::move(*job), std::move(*kind), std::move(*state),
                        *done,           *total,           *created};
}

} // namespace

Message toMessage(const Cancel& cancel) {
    return detail::jobRequestMessage(MessageType::Cancel, cancel.id, cancel.job);
}

Message toMessage(const Cancelled& cancelled) {
    Message message =
        detail::jobRequestMessage(MessageType::Cancelled, cancelled.id, cancelled.job);
    message.control["state"] = cancelled.state;
    return message;
}

Message toMessage(const ListJobs& list) {
    json::object control = detail::controlOf(MessageType::ListJobs);
    control["id"] = list.id;
    return Message{std::move(control), {}};
}

Message toMessage(const JobList& list) {
    json::object control = detail::controlOf(MessageType::JobList);
    control["id"] = list.id;
    json::array jobs;
    for (const JobListEntry& entry : list.jobs)
        jobs.push_back(json::object{{"job", entry.job},
                                    {"kind", entry.kind},
                                    {"state", entry.state},
                                    {"done", entry.done},
                                    {"total", entry.total},
                                    {"created", entry.created}});
    control["jobs"] = std::move(jobs);
    return Message{std::move(control), {}};
}

Expected<Cancel> parseCancel(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::Cancel);
    if (!request)
        return tl::unexpected(request.error());
    return Cancel{request->id, std::move(request->job)};
}

Expected<Cancelled> parseCancelled(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::Cancelled);
    if (!request)
        return tl::unexpected(request.error());
    auto state = detail::requireName(control, "state");
    if (!state)
        return tl::unexpected(state.error());
    return Cancelled{request->id, std::move(request->job), std::move(*state)};
}

Expected<ListJobs> parseListJobs(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::ListJobs); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    return ListJobs{*id};
}

Expected<JobList> parseJobList(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::JobList); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    const json::value* jobs = control.if_contains("jobs");
    if (!jobs || !jobs->is_array())
        return invalid("job_list needs a 'jobs' list");
    if (jobs->get_array().size() > kMaxListedJobs)
        return invalid("'jobs' lists more than " + std::to_string(kMaxListedJobs) + " jobs");
    JobList list{*id, {}};
    for (const json::value& value : jobs->get_array()) {
        auto entry = parseEntry(value);
        if (!entry)
            return tl::unexpected(entry.error());
        list.jobs.push_back(std::move(*entry));
    }
    return list;
}

} // namespace goblin::net
