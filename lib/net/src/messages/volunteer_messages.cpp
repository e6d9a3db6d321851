#include "goblin/net/messages/volunteer_messages.hpp"

#include <algorithm>

#include <cmath>

#include "goblin/net/content_digest.hpp"
#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

// The control object of a volunteer message: type, ["op"], task, attempt (the wire's key order).
json::object leaseControl(MessageType type, std::optional<TaskOp> op, const TaskRef& ref) {
    json::object control = detail::controlOf(type);
    if (op)
        control["op"] = wireName(*op);
    control["task"] = ref.task;
    control["attempt"] = ref.attempt;
    return control;
}

// On a result or task_error "op" is written for graphs only.
std::optional<TaskOp> replyOp(TaskOp op) {
    return op == TaskOp::Graph ? std::optional(op) : std::nullopt;
}

Expected<TaskRef> parseTyped(const json::object& control, MessageType type) {
    if (auto ok = detail::requireType(control, type); !ok)
        return tl::unexpected(ok.error());
    return parseTaskRef(control);
}

// "input_refs": absent, or one entry per graph input (null or {"digest"[, "keep"]}); the entries
// whose tensor follows (null, or keep) must match the tensors that came.
// "gemm_nodes": absent, or an array of at most kMaxGemmNodes distinct node ids (≥ 0). Whether
// each names a matmul or convolution node of the graph is the executor's check.
Expected<std::vector<std::int64_t>> parseGemmNodes(const json::object& control) {
    std::vector<std::int64_t> nodes;
    const auto* field = control.if_contains("gemm_nodes");
    if (!field)
        return nodes;
    if (!field->is_array() || field->get_array().size() > kMaxGemmNodes)
        return invalid("field 'gemm_nodes' is an array of at most 4096 node ids");
    for (const json::value& entry : field->get_array()) {
        if (!entry.is_int64() || entry.get_int64() < 0)
            return invalid("field 'gemm_nodes' holds node ids (integers ≥ 0)");
        if (std::find(nodes.begin(), nodes.end(), entry.get_int64()) != nodes.end())
            return invalid("field 'gemm_nodes' names a node twice");
        nodes.push_back(entry.get_int64());
    }
    return nodes;
}

// "omit_witnesses": absent (0), or an integer from 0 to the number of the graph's outputs.
Expected<std::int64_t> parseOmitWitnesses(const json::object& control, const json::object& graph) {
    const auto* field = control.if_contains("omit_witnesses");
    if (!field)
        return 0;
    const auto* outputs = graph.if_contains("outputs");
    const auto most = outputs && outputs->is_array()
                          ? static_cast<std::int64_t>(outputs->get_array().size())
                          : std::int64_t{0};
    if (!field->is_int64() || field->get_int64() < 0 || field->get_int64() > most)
        return invalid("field 'omit_witnesses' is an integer from 0 to the graph's output count");
    return field->get_int64();
}

Expected<std::vector<std::optional<InputRef>>> parseInputRefs(const json::object& control,
                                                              std::size_t tensors) {
    std::vector<std::optional<InputRef>> refs;
    const auto* field = control.if_contains("input_refs");
    if (!field)
        return refs;
    if (!field->is_array() || field->get_array().size() > kMaxInputRefs)
        return invalid("field 'input_refs' is an array of at most 4096 entries");
    std::size_t following = 0;
    for (const json::value& entry : field->get_array()) {
        if (entry.is_null()) {
            refs.emplace_back();
            ++following;
            continue;
        }
        const auto* object = entry.if_object();
        const auto* digest = object ? object->if_contains("digest") : nullptr;
        if (!digest || !digest->is_string() || !isDigestHex(digest->get_string()))
            return invalid("an 'input_refs' entry is null or {\"digest\": 64 hex digits}");
        const auto* keep = object->if_contains("keep");
        if (keep && !keep->is_bool())
            return invalid("field 'keep' of an 'input_refs' entry must be a boolean");
        refs.push_back(InputRef{std::string(digest->get_string()), keep && keep->get_bool()});
        following += refs.back()->keep ? 1 : 0;
    }
    if (following != tensors)
        return invalid(
            detail::joined({"field 'input_refs' names ", std::to_string(following),
                            " inputs that follow, but ", std::to_string(tensors), " came"}));
    return refs;
}

} // namespace

std::string_view wireName(TaskOp op) {
    return op == TaskOp::Graph ? "graph" : "matmul";
}

std::optional<TaskOp> taskOpFromWire(std::string_view name) {
    if (name == "matmul")
        return TaskOp::Matmul;
    if (name == "graph")
        return TaskOp::Graph;
    return std::nullopt;
}

std::string_view wireName(Verdict verdict) {
    switch (verdict) {
    case Verdict::Accepted:
        return "accepted";
    case Verdict::Rejected:
        return "rejected";
    case Verdict::Stale:
        return "stale";
    }
    return "stale";
}

std::optional<Verdict> verdictFromWire(std::string_view name) {
    for (Verdict verdict : {Verdict::Accepted, Verdict::Rejected, Verdict::Stale})
        if (wireName(verdict) == name)
            return verdict;
    return std::nullopt;
}

Message toMessage(const MatmulTask& task) {
    // The wire's order for matmul tasks: type, task, attempt, op, dtype.
    json::object control = leaseControl(MessageType::Task, std::nullopt, task.ref);
    control["op"] = wireName(TaskOp::Matmul);
    control["dtype"] = core::wireName(task.dtype);
    return detail::withTensors(std::move(control), {task.a, task.b});
}

Message toMessage(const GraphTask& task) {
    json::object control = leaseControl(MessageType::Task, TaskOp::Graph, task.ref);
    control["graph"] = task.graph;
    if (!task.inputRefs.empty()) {
        json::array refs;
        for (const auto& ref : task.inputRefs) {
            if (!ref) {
                refs.emplace_back(nullptr);
                continue;
            }
            json::object entry{{"digest", ref->digest}};
            if (ref->keep)
                entry["keep"] = true;
            refs.emplace_back(std::move(entry));
        }
        control["input_refs"] = std::move(refs);
    }
    if (!task.gemmNodes.empty()) {
        json::array nodes;
        for (std::int64_t node : task.gemmNodes)
            nodes.emplace_back(node);
        control["gemm_nodes"] = std::move(nodes);
    }
    if (task.omitWitnesses > 0)
        control["omit_witnesses"] = task.omitWitnesses;
    return detail::withTensors(std::move(control), task.inputs);
}

Message toMessage(const TaskResult& result) {
    json::object control = leaseControl(MessageType::Result, replyOp(result.op), result.ref);
    control["backend"] = result.backend;
    control["compute_seconds"] = result.computeSeconds;
    return detail::withTensors(std::move(control), result.outputs);
}

Message toMessage(const TaskError& error) {
    json::object control = leaseControl(MessageType::TaskError, replyOp(error.op), error.ref);
    control["code"] = wireName(error.error.code);
    control["message"] = error.error.message;
    return Message{std::move(control), {}};
}

Message toMessage(const ForgetInputs& forget) {
    json::object control = detail::controlOf(MessageType::ForgetInputs);
    json::array digests;
    for (const std::string& digest : forget.digests)
        digests.emplace_back(digest);
    control["digests"] = std::move(digests);
    return Message{std::move(control), {}};
}

Message toMessage(const TaskVerdict& verdict) {
    json::object control = leaseControl(MessageType::Verdict, std::nullopt, verdict.ref);
    control["verdict"] = wireName(verdict.verdict);
    return Message{std::move(control), {}};
}

Expected<TaskRef> parseTaskRef(const json::object& control) {
    auto task = requireIntIn(control, "task", 0, INT64_MAX);
    if (!task)
        return tl::unexpected(task.error());
    auto attempt = requireIntIn(control, "attempt", 0, INT64_MAX);
    if (!attempt)
        return tl::unexpected(attempt.error());
    return TaskRef{*task, *attempt};
}

Expected<TaskOp> parseTaskOp(const json::object& control) {
    auto name = requireString(control, "op");
    if (!name)
        return tl::unexpected(name.error());
    const auto op = taskOpFromWire(*name);
    if (!op)
        return makeError(ErrorCode::VersionMismatch,
                         "op '" + name->substr(0, 64) + "' is not in this protocol's catalog");
    return *op;
}

Expected<TaskOp> parseReplyOp(const json::object& control) {
    if (!control.contains("op"))
        return TaskOp::Matmul;
    auto name = requireString(control, "op");
    if (!name)
        return tl::unexpected(name.error());
    if (*name != "graph")
        return invalid("field 'op' of a reply is \"graph\" or absent");
    return TaskOp::Graph;
}

Expected<MatmulTask> parseMatmulTask(const Message& message) {
    auto ref = parseTyped(message.control, MessageType::Task);
    if (!ref)
        return tl::unexpected(ref.error());
    auto op = parseTaskOp(message.control);
    if (!op)
        return tl::unexpected(op.error());
    if (*op != TaskOp::Matmul)
        return invalid("not a matmul task");
    auto dtypeName = requireString(message.control, "dtype");
    if (!dtypeName)
        return tl::unexpected(dtypeName.error());
    const auto dtype = core::dtypeFromWireName(*dtypeName);
    if (!dtype)
        return invalid("field 'dtype' names no dtype");
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    if (message.tensors.size() != 2)
        return invalid("a matmul task carries exactly 2 tensors (A block, B block)");
    for (const TensorPtr& tensor : message.tensors)
        if (tensor->dtype() != *dtype)
            return invalid(
                detail::joined({"a matmul task's tensors are not of its dtype ", *dtypeName}));
    return MatmulTask{*ref, *dtype, message.tensors[0], message.tensors[1]};
}

Expected<GraphTask> parseGraphTask(const Message& message) {
    auto ref = parseTyped(message.control, MessageType::Task);
    if (!ref)
        return tl::unexpected(ref.error());
    auto op = parseTaskOp(message.control);
    if (!op)
        return tl::unexpected(op.error());
    if (*op != TaskOp::Graph)
        return invalid("not a graph task");
    const auto* graph = message.control.if_contains("graph");
    if (!graph || !graph->is_object())
        return invalid("a graph task needs a 'graph' object");
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    auto refs = parseInputRefs(message.control, message.tensors.size());
    if (!refs)
        return tl::unexpected(refs.error());
    auto gemmNodes = parseGemmNodes(message.control);
    if (!gemmNodes)
        return tl::unexpected(gemmNodes.error());
    auto omitWitnesses = parseOmitWitnesses(message.control, graph->get_object());
    if (!omitWitnesses)
        return tl::unexpected(omitWitnesses.error());
    return GraphTask{*ref,
                     graph->get_object(),
                     message.tensors,
                     std::move(*refs),
                     std::move(*gemmNodes),
                     *omitWitnesses};
}

Expected<ForgetInputs> parseForgetInputs(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::ForgetInputs); !ok)
        return tl::unexpected(ok.error());
    const auto* digests = control.if_contains("digests");
    if (!digests || !digests->is_array())
        return invalid("a forget_inputs needs a 'digests' array");
    if (digests->get_array().size() > kMaxInputRefs)
        return invalid("a forget_inputs names at most 4096 digests");
    ForgetInputs forget;
    for (const json::value& digest : digests->get_array()) {
        if (!digest.is_string() || !isDigestHex(digest.get_string()))
            return invalid("field 'digests' holds 64-digit lowercase hex digests only");
        forget.digests.emplace_back(digest.get_string());
    }
    return forget;
}

Expected<TaskResult> parseTaskResult(const Message& message) {
    auto ref = parseTyped(message.control, MessageType::Result);
    if (!ref)
        return tl::unexpected(ref.error());
    auto op = parseReplyOp(message.control);
    if (!op)
        return tl::unexpected(op.error());
    auto backend = detail::requireName(message.control, "backend");
    if (!backend)
        return tl::unexpected(backend.error());
    auto seconds = requireNumber(message.control, "compute_seconds");
    if (!seconds)
        return tl::unexpected(seconds.error());
    if (!std::isfinite(*seconds) || *seconds < 0)
        return invalid("field 'compute_seconds' must be a finite number >= 0");
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    if (*op == TaskOp::Matmul && message.tensors.size() != 1)
        return invalid("result needs 'task', 'attempt' and exactly one tensor");
    return TaskResult{*op, *ref, std::move(*backend), *seconds, message.tensors};
}

Expected<TaskError> parseTaskError(const json::object& control) {
    auto ref = parseTyped(control, MessageType::TaskError);
    if (!ref)
        return tl::unexpected(ref.error());
    auto op = parseReplyOp(control);
    if (!op)
        return tl::unexpected(op.error());
    auto error = detail::requireError(control);
    if (!error)
        return tl::unexpected(error.error());
    return TaskError{*op, *ref, std::move(*error)};
}

Expected<TaskVerdict> parseTaskVerdict(const json::object& control) {
    auto ref = parseTyped(control, MessageType::Verdict);
    if (!ref)
        return tl::unexpected(ref.error());
    auto name = requireString(control, "verdict");
    if (!name)
        return tl::unexpected(name.error());
    const auto verdict = verdictFromWire(*name);
    if (!verdict)
        return invalid("field 'verdict' must be accepted, rejected or stale");
    return TaskVerdict{*ref, *verdict};
}

} // namespace goblin::net
