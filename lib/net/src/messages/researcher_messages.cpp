// The matmul, graph and lifecycle messages of researcher_messages.hpp; its audit messages are in
// audit_messages.cpp, the training job's in train_job_messages.cpp.
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
    auto id = detail::parseTensorRequest(message, MessageType::SubmitMatmul);
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
    auto id = detail::parseTensorRequest(message, MessageType::SubmitGraph);
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
    auto tiles = detail::requireCount(control, "tiles");
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
    auto tasks = detail::requireCount(control, "tasks");
    if (!tasks)
        return tl::unexpected(tasks.error());
    return GraphJobAccepted{request->id, std::move(request->job), *tasks};
}

Expected<Progress> parseProgress(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::Progress); !ok)
        return tl::unexpected(ok.error());
    auto job = detail::requireName(control, "job");
    auto done = detail::requireCount(control, "done");
    auto total = detail::requireCount(control, "total");
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
    auto done = detail::requireCount(control, "done");
    auto total = detail::requireCount(control, "total");
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
    auto id = detail::parseTensorRequest(message, MessageType::JobDone);
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
