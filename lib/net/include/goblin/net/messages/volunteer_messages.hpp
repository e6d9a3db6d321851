// Typed messages between the node and a volunteer (docs/protocol.md, "Volunteer messages" and the
// graph volunteer side): builders that write the exact wire fields, and parsers that validate
// every field of a hostile control object. Pure functions on values; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// Which kind of task a task, result or task_error is about. On a task "op" is required; on a
// result or task_error it is written only for graphs ("op":"graph") and absent means matmul.
enum class TaskOp { Matmul, Graph };

std::string_view wireName(TaskOp op); // "matmul", "graph"
std::optional<TaskOp> taskOpFromWire(std::string_view name);

// "task" and "attempt": every volunteer message names the lease it answers.
struct TaskRef {
    std::int64_t task = 0;
    std::int64_t attempt = 0;
    friend bool operator==(const TaskRef&, const TaskRef&) = default;
};

// ← {"type":"task","task","attempt","op":"matmul","dtype"} + A block, B block.
struct MatmulTask {
    TaskRef ref;
    core::DType dtype = core::DType::F32;
    TensorPtr a;
    TensorPtr b;
};

// A graph input named by its tensor digest (to volunteers that announced
// "input_cache_bytes"): with `keep` the tensor follows and the volunteer keeps it under `digest`
// for later tasks; without, it does not follow and the volunteer uses the copy it kept.
struct InputRef {
    std::string digest; // goblin/net/content_digest.hpp's tensorDigest, 64 hex digits
    bool keep = false;
    friend bool operator==(const InputRef&, const InputRef&) = default;
};

// ← {"type":"task","op":"graph","task","attempt","graph":{…}[, "input_refs":[…]]} + the chunk's
// inputs. The graph stays JSON: the volunteer decodes and validates it itself (it trusts no node).
// Without "input_refs" every input follows, in order. With it, one entry per graph input: null
// (the tensor follows) or an InputRef; `inputs` holds the tensors that follow, in order.
struct GraphTask {
    TaskRef ref;
    boost::json::object graph;
    std::vector<TensorPtr> inputs;
    std::vector<std::optional<InputRef>> inputRefs;
    // "gemm_nodes": the ids of matmul and conv2d nodes (protocol 9: and conv2d gradient nodes) the
    // volunteer may compute with any GEMM
    // (BLAS, CLBlast) instead of the canonical kernel, because the lab node checks their values by
    // Freivalds rather than comparing bits (absent = none; a volunteer that ignores
    // it computes them canonically, which passes the same check).
    std::vector<std::int64_t> gemmNodes;
    // "omit_witnesses" (protocol 10): how many of the graph's last outputs — the witnesses the
    // node checks its audits against — the volunteer leaves out of its result, because another
    // volunteer's replica of the task carries them (absent = 0: every output). At most the
    // graph's output count.
    std::int64_t omitWitnesses = 0;
};
inline constexpr std::size_t kMaxGemmNodes = 4096;

// ← {"type":"forget_inputs","digests":[…]}: the volunteer drops the inputs it kept under these
// digests (a digest it does not hold is ignored).
struct ForgetInputs {
    std::vector<std::string> digests;
};
inline constexpr std::size_t kMaxInputRefs = 4096; // entries of input_refs, digests of a forget

// → {"type":"result"[, "op":"graph"],"task","attempt","backend","compute_seconds"} + outputs
// (one C tile for matmul, one per graph output).
struct TaskResult {
    TaskOp op = TaskOp::Matmul;
    TaskRef ref;
    std::string backend;       // the backend that computed it; parsing caps nothing, the node does
    double computeSeconds = 0; // "compute_seconds", ≥ 0
    std::vector<TensorPtr> outputs;
};

// → {"type":"task_error"[, "op":"graph"],"task","attempt","code","message"}.
struct TaskError {
    TaskOp op = TaskOp::Matmul;
    TaskRef ref;
    Error error;
};

enum class Verdict { Accepted, Rejected, Stale };

std::string_view wireName(Verdict verdict); // "accepted", "rejected", "stale"
std::optional<Verdict> verdictFromWire(std::string_view name);

// ← {"type":"verdict","task","attempt","verdict"}.
struct TaskVerdict {
    TaskRef ref;
    Verdict verdict = Verdict::Stale;
};

Message toMessage(const MatmulTask& task);
Message toMessage(const GraphTask& task);
Message toMessage(const TaskResult& result);
Message toMessage(const TaskError& error);
Message toMessage(const TaskVerdict& verdict);
Message toMessage(const ForgetInputs& forget);

// The lease a volunteer message names, alone (to answer even a task that fails to parse).
[[nodiscard]] Expected<TaskRef> parseTaskRef(const boost::json::object& control);
// The "op" of a task: missing or not a string is InvalidMessage; a string naming no op this
// protocol knows is VersionMismatch.
[[nodiscard]] Expected<TaskOp> parseTaskOp(const boost::json::object& control);
// The optional "op" of a result or task_error (absent: matmul).
[[nodiscard]] Expected<TaskOp> parseReplyOp(const boost::json::object& control);

// Each parser checks "type" and every field; errors are InvalidMessage naming the field.
// A matmul task has exactly two tensors, both of its dtype; a matmul result exactly one tensor.
[[nodiscard]] Expected<MatmulTask> parseMatmulTask(const Message& message);
[[nodiscard]] Expected<GraphTask> parseGraphTask(const Message& message);
[[nodiscard]] Expected<TaskResult> parseTaskResult(const Message& message);
[[nodiscard]] Expected<TaskError> parseTaskError(const boost::json::object& control);
[[nodiscard]] Expected<TaskVerdict> parseTaskVerdict(const boost::json::object& control);
// Digests are 64 lowercase hex digits, at most kMaxInputRefs of them.
[[nodiscard]] Expected<ForgetInputs> parseForgetInputs(const boost::json::object& control);

} // namespace goblin::net
