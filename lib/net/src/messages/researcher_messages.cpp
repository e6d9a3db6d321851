#include "goblin/net/messages/researcher_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

json::array shapeJson(const MatrixShape& shape) {
    return json::array{shape.rows, shape.cols};
}

// [rows, cols], both integers ≥ `minimum`.
Expected<MatrixShape> parseShape(const json::value& value, std::string_view key,
                                 std::int64_t minimum) {
    if (!value.is_array() || value.get_array().size() != 2 || !value.get_array()[0].is_int64() ||
        !value.get_array()[1].is_int64() || value.get_array()[0].get_int64() < minimum ||
        value.get_array()[1].get_int64() < minimum)
        return invalid(detail::joined(
            {"'", key, "' must be [rows, cols] with both >= ", std::to_string(minimum)}));
    return MatrixShape{value.get_array()[0].get_int64(), value.get_array()[1].get_int64()};
}

Expected<MatrixShape> requireShape(const json::object& control, std::string_view key) {
    const auto* value = control.if_contains(key);
    if (!value)
        return invalid(detail::joined({"field '", key, "' is missing"}));
    return parseShape(*value, key, 0);
}

Expected<std::int64_t> requireCount(const json::object& control, std::string_view key) {
    return requireIntIn(control, key, 0, INT64_MAX);
}

} // namespace

Expected<std::vector<std::string>> stagedInputs(const Message& message) {
    const auto* inputs = message.control.if_contains("inputs");
    if (!inputs || inputs->is_null())
        return std::vector<std::string>{};
    if (!inputs->is_array() || inputs->get_array().size() != 2 || !message.tensors.empty())
        return invalid("submit_matmul 'inputs' names A's and B's uploads, with no tensor");
    std::vector<std::string> names;
    for (const json::value& name : inputs->get_array()) {
        if (!name.is_string() || name.get_string().empty() ||
            name.get_string().size() > detail::kMaxNameBytes)
            return invalid("submit_matmul 'inputs' are upload ids");
        names.emplace_back(name.get_string());
    }
    return names;
}

namespace {

// "type", the tensor count and the request id of a message that carries tensors.
Expected<std::int64_t> parseTensorRequest(const Message& message, MessageType type) {
    if (auto ok = detail::requireType(message.control, type); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    return detail::optionalId(message.control);
}

} // namespace

Message toMessage(const SubmitMatmul& submit) {
    json::object control = detail::controlOf(MessageType::SubmitMatmul);
    control["id"] = submit.id;
    if (submit.tile)
        control["tile"] = shapeJson(*submit.tile);
    if (submit.stream)
        control["stream"] = true;
    if (!submit.uploads.empty()) {
        control["inputs"] = json::array(submit.uploads.begin(), submit.uploads.end());
        return Message{std::move(control), {}};
    }
    return detail::withTensors(std::move(control), {submit.a, submit.b});
}

Message toMessage(const SubmitGraph& submit) {
    json::object control = detail::controlOf(MessageType::SubmitGraph);
    control["id"] = submit.id;
    control["graph"] = submit.graph;
    if (submit.batch)
        control["batch"] = *submit.batch;
    return detail::withTensors(std::move(control), submit.inputs);
}

Message toMessage(const MatmulJobAccepted& accepted) {
    json::object control = detail::controlOf(MessageType::JobAccepted);
    control["id"] = accepted.id;
    control["job"] = accepted.job;
    control["tiles"] = accepted.tiles;
    control["tile"] = shapeJson(accepted.tile);
    control["shape"] = shapeJson(accepted.shape);
    control["dtype"] = core::wireName(accepted.dtype);
    if (accepted.streamed)
        control["delivery"] = "tiles";
    return Message{std::move(control), {}};
}

Message toMessage(const GraphJobAccepted& accepted) {
    json::object control = detail::controlOf(MessageType::JobAccepted);
    control["id"] = accepted.id;
    control["job"] = accepted.job;
    control["kind"] = "graph";
    control["tasks"] = accepted.tasks;
    return Message{std::move(control), {}};
}

Message toMessage(const SubmitTrain& submit) {
    json::object control = detail::controlOf(MessageType::SubmitTrain);
    control["id"] = submit.id;
    control["graph"] = submit.graph;
    control["train"] = submit.train;
    return detail::withTensors(std::move(control), submit.tensors);
}

Message toMessage(const TrainJobAccepted& accepted) {
    json::object control = detail::controlOf(MessageType::JobAccepted);
    control["id"] = accepted.id;
    control["job"] = accepted.job;
    control["kind"] = "train";
    control["rounds"] = accepted.rounds;
    return Message{std::move(control), {}};
}

Message toMessage(const TrainRound& round) {
    json::object control = detail::controlOf(MessageType::TrainRound);
    control["job"] = round.job;
    control["round"] = round.record;
    return Message{std::move(control), {}};
}

Message toMessage(const Progress& progress) {
    json::object control = detail::controlOf(MessageType::Progress);
    control["job"] = progress.job;
    control["done"] = progress.done;
    control["total"] = progress.total;
    if (!progress.waiting.empty())
        control["waiting"] = progress.waiting;
    return Message{std::move(control), {}};
}

Message toMessage(const JobStatus& status) {
    json::object control = detail::controlOf(MessageType::JobStatus);
    control["id"] = status.id;
    control["job"] = status.job;
    control["state"] = status.state;
    control["done"] = status.done;
    control["total"] = status.total;
    return Message{std::move(control), {}};
}

Message toMessage(const Fetch& fetch) {
    return detail::jobRequestMessage(MessageType::Fetch, fetch.id, fetch.job);
}

Message toMessage(const Release& release) {
    return detail::jobRequestMessage(MessageType::Release, release.id, release.job);
}

Message toMessage(const Released& released) {
    return detail::jobRequestMessage(MessageType::Released, released.id, released.job);
}

Message toMessage(const JobDone& done) {
    json::object control = detail::controlOf(MessageType::JobDone);
    control["id"] = done.id;
    control["job"] = done.job;
    control["summary"] = done.summary;
    return detail::withTensors(std::move(control), done.outputs);
}

Message toMessage(const JobFailed& failed) {
    json::object control = detail::controlOf(MessageType::JobFailed);
    control["job"] = failed.job;
    control["code"] = wireName(failed.error.code);
    control["message"] = failed.error.message;
    return Message{std::move(control), {}};
}

Expected<SubmitMatmul> parseSubmitMatmul(const Message& message) {
    auto id = parseTensorRequest(message, MessageType::SubmitMatmul);
    if (!id)
        return tl::unexpected(id.error());
    auto uploads = stagedInputs(message);
    if (!uploads)
        return tl::unexpected(uploads.error());
    if (uploads->empty() && message.tensors.size() != 2)
        return invalid("submit_matmul carries exactly 2 tensors (A, B), or 'inputs'");
    SubmitMatmul submit{*id, std::nullopt, nullptr, nullptr, std::move(*uploads)};
    if (submit.uploads.empty()) {
        submit.a = message.tensors[0];
        submit.b = message.tensors[1];
    }
    if (const auto* tile = message.control.if_contains("tile"); tile && !tile->is_null()) {
        auto shape = parseShape(*tile, "tile", 1);
        if (!shape)
            return tl::unexpected(shape.error());
        submit.tile = *shape;
    }
    if (const auto* stream = message.control.if_contains("stream")) {
        if (!stream->is_bool())
            return invalid("'stream' must be true or false");
        submit.stream = stream->get_bool();
    }
    return submit;
}

Expected<SubmitGraph> parseSubmitGraph(const Message& message) {
    auto id = parseTensorRequest(message, MessageType::SubmitGraph);
    if (!id)
        return tl::unexpected(id.error());
    const auto* graph = message.control.if_contains("graph");
    if (!graph || !graph->is_object())
        return makeError(ErrorCode::InvalidInput, "submit_graph needs a 'graph' object");
    SubmitGraph submit{*id, graph->get_object(), std::nullopt, message.tensors};
    if (const auto* batch = message.control.if_contains("batch"); batch && !batch->is_null()) {
        if (!batch->is_object())
            return makeError(ErrorCode::InvalidInput, "'batch' must be an object");
        submit.batch = batch->get_object();
    }
    return submit;
}

bool isGraphJobAccepted(const json::object& control) {
    const auto* kind = control.if_contains("kind");
    return kind && kind->is_string() && kind->get_string() == "graph";
}

Expected<MatmulJobAccepted> parseMatmulJobAccepted(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::JobAccepted);
    if (!request)
        return tl::unexpected(request.error());
    if (control.contains("kind"))
        return invalid("a matmul job_accepted has no 'kind'");
    auto tiles = requireCount(control, "tiles");
    auto tile = requireShape(control, "tile");
    auto shape = requireShape(control, "shape");
    auto dtype = requireString(control, "dtype");
    if (!tiles)
        return tl::unexpected(tiles.error());
    if (!tile)
        return tl::unexpected(tile.error());
    if (!shape)
        return tl::unexpected(shape.error());
    if (!dtype)
        return tl::unexpected(dtype.error());
    const auto parsed = core::dtypeFromWireName(*dtype);
    if (!parsed)
        return invalid("field 'dtype' names no dtype");
    const auto* delivery = control.if_contains("delivery");
    if (delivery && *delivery != "tiles")
        return invalid("a matmul job_accepted's 'delivery' is \"tiles\" or absent");
    return MatmulJobAccepted{request->id, std::move(request->job), *tiles, *tile, *shape,
                             *parsed,     delivery != nullptr};
}

Expected<GraphJobAccepted> parseGraphJobAccepted(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::JobAccepted);
    if (!request)
        return tl::unexpected(request.error());
    if (!isGraphJobAccepted(control))
        return invalid("a graph job_accepted has \"kind\": \"graph\"");
    auto tasks = requireCount(control, "tasks");
    if (!tasks)
        return tl::unexpected(tasks.error());
    return GraphJobAccepted{request->id, std::move(request->job), *tasks};
}

Expected<Progress> parseProgress(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::Progress); !ok)
        return tl::unexpected(ok.error());
    auto job = detail::requireName(control, "job");
    auto done = requireCount(control, "done");
    auto total = requireCount(control, "total");
    if (!job)
        return tl::unexpected(job.error());
    if (!done)
        return tl::unexpected(done.error());
    if (!total)
        return tl::unexpected(total.error());
    if (*done > *total)
        return invalid("progress 'done' is over 'total'");
    std::string waiting;
    if (control.contains("waiting")) {
        auto why = requireString(control, "waiting");
        if (!why)
            return tl::unexpected(why.error());
        waiting = std::move(*why);
    }
    return Progress{std::move(*job), *done, *total, std::move(waiting)};
}

Expected<JobStatus> parseJobStatus(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::JobStatus);
    if (!request)
        return tl::unexpected(request.error());
    auto state = requireString(control, "state");
    auto done = requireCount(control, "done");
    auto total = requireCount(control, "total");
    if (!state)
        return tl::unexpected(state.error());
    if (*state != "running" && *state != "done" && *state != "failed" && *state != "cancelled")
        return invalid("field 'state' must be running, done, failed or cancelled");
    if (!done)
        return tl::unexpected(done.error());
    if (!total)
        return tl::unexpected(total.error());
    return JobStatus{request->id, std::move(request->job), std::move(*state), *done, *total};
}

Expected<Fetch> parseFetch(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::Fetch);
    if (!request)
        return tl::unexpected(request.error());
    return Fetch{request->id, std::move(request->job)};
}

Expected<Release> parseRelease(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::Release);
    if (!request)
        return tl::unexpected(request.error());
    return Release{request->id, std::move(request->job)};
}

Expected<Released> parseReleased(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::Released);
    if (!request)
        return tl::unexpected(request.error());
    return Released{request->id, std::move(request->job)};
}

Expected<JobDone> parseJobDone(const Message& message) {
    auto id = parseTensorRequest(message, MessageType::JobDone);
    if (!id)
        return tl::unexpected(id.error());
    auto job = detail::requireName(message.control, "job");
    if (!job)
        return tl::unexpected(job.error());
    const auto* summary = message.control.if_contains("summary");
    if (!summary || !summary->is_object())
        return invalid("job_done needs a 'summary' object");
    const auto* delivery = summary->get_object().if_contains("delivery");
    if (message.tensors.empty() && !(delivery && (*delivery == "rows" || *delivery == "tiles")))
        return invalid("job_done carries at least one tensor (none: summary.delivery \"rows\" "
                       "or \"tiles\")");
    return JobDone{*id, std::move(*job), summary->get_object(), message.tensors};
}

Expected<JobFailed> parseJobFailed(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::JobFailed); !ok)
        return tl::unexpected(ok.error());
    auto job = detail::requireName(control, "job");
    if (!job)
        return tl::unexpected(job.error());
    auto error = detail::requireError(control);
    if (!error)
        return tl::unexpected(error.error());
    return JobFailed{std::move(*job), std::move(*error)};
}

} // namespace goblin::net

namespace goblin::net {

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
    auto tasks = requireCount(entry, "tasks");
    auto corrected = requireCount(entry, "corrected");
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
    auto id = parseTensorRequest(message, MessageType::AuditReport);
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

Expected<SubmitTrain> parseSubmitTrain(const Message& message) {
    auto id = parseTensorRequest(message, MessageType::SubmitTrain);
    if (!id)
        return tl::unexpected(id.error());
    const auto* graph = message.control.if_contains("graph");
    const auto* train = message.control.if_contains("train");
    if (!graph || !graph->is_object() || !train || !train->is_object())
        return makeError(ErrorCode::InvalidInput,
                         "submit_train needs a 'graph' and a 'train' object");
    return SubmitTrain{*id, graph->get_object(), train->get_object(), message.tensors};
}

bool isTrainJobAccepted(const json::object& control) {
    const auto* kind = control.if_contains("kind");
    return kind && kind->is_string() && kind->get_string() == "train";
}

Expected<TrainJobAccepted> parseTrainJobAccepted(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::JobAccepted);
    if (!request)
        return tl::unexpected(request.error());
    if (!isTrainJobAccepted(control))
        return invalid("a training job_accepted has \"kind\": \"train\"");
    auto rounds = requireCount(control, "rounds");
    if (!rounds)
        return tl::unexpected(rounds.error());
    return TrainJobAccepted{request->id, std::move(request->job), *rounds};
}

Expected<TrainRound> parseTrainRound(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::TrainRound); !ok)
        return tl::unexpected(ok.error());
    auto job = detail::requireName(control, "job");
    if (!job)
        return tl::unexpected(job.error());
    const json::value* record = control.if_contains("round");
    if (!record || !record->is_object())
        return invalid("train_round needs a 'round' object");
    return TrainRound{std::move(*job), record->get_object()};
}

} // namespace goblin::net
