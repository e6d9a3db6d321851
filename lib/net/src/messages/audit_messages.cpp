// The audit messages of researcher_messages.hpp: audit and audit_report (docs/protocol.md,
// "Audits of delivered jobs").
#include "goblin/net/messages/researcher_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

json::object auditEntryJson(const JobAuditEntry& entry) {
    return json::object{{"volunteer", entry.volunteer}, {"reason", entry.reason},
                        {"state", entry.state},         {"tasks", entry.tasks},
                        {"corrected", entry.corrected}, {"at", entry.at}};
}

Expected<JobAuditEntry> parseAuditEntry(const json::value& value) {
    if (!value.is_object())
        return invalid("each of 'audits' must be an object");
    const json::object& entry = value.get_object();
    auto volunteer = detail::requireName(entry, "volunteer");
    auto reason = requireString(entry, "reason");
    auto state = detail::requireName(entry, "state");
    auto tasks = detail::requireCount(entry, "tasks");
    auto corrected = detail::requireCount(entry, "corrected");
    auto at = requireNumber(entry, "at");
    for (const Error* error :
         {volunteer ? nullptr : &volunteer.error(), reason ? nullptr : &reason.error(),
          state ? nullptr : &state.error(), tasks ? nullptr : &tasks.error(),
          corrected ? nullptr : &corrected.error(), at ? nullptr : &at.error()})
        if (error)
            return tl::unexpected(*error);
    return JobAuditEntry{
        std::move(*volunteer), std::move(*reason), std::move(*state), *tasks, *corrected, *at};
}

} // namespace

Message toMessage(const Audit& audit) {
    return detail::jobRequestMessage(MessageType::Audit, audit.id, audit.job);
}

Message toMessage(const AuditReport& report) {
    json::object control = detail::controlOf(MessageType::AuditReport);
    control["id"] = report.id;
    control["job"] = report.job;
    control["state"] = report.state;
    json::array audits;
    for (const JobAuditEntry& entry : report.audits)
        audits.push_back(auditEntryJson(entry));
    control["audits"] = std::move(audits);
    return detail::withTensors(std::move(control), report.outputs);
}

Expected<Audit> parseAudit(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::Audit);
    if (!request)
        return tl::unexpected(request.error());
    return Audit{request->id, std::move(request->job)};
}

Expected<AuditReport> parseAuditReport(const Message& message) {
    auto id = detail::parseTensorRequest(message, MessageType::AuditReport);
    if (!id)
        return tl::unexpected(id.error());
    auto job = detail::requireName(message.control, "job");
    if (!job)
        return tl::unexpected(job.error());
    auto state = detail::requireName(message.control, "state");
    if (!state)
        return tl::unexpected(state.error());
    const auto* audits = message.control.if_contains("audits");
    if (!audits || !audits->is_array() || audits->get_array().size() > kMaxAuditEntries)
        return invalid(detail::joined({"audit_report needs an 'audits' list of at most ",
                                       std::to_string(kMaxAuditEntries), " entries"}));
    AuditReport report{*id, std::move(*job), std::move(*state), {}, message.tensors};
    for (const json::value& value : audits->get_array()) {
        auto entry = parseAuditEntry(value);
        if (!entry)
            return tl::unexpected(entry.error());
        report.audits.push_back(std::move(*entry));
    }
    return report;
}

} // namespace goblin::net
