// Typed messages between a researcher and the node (docs/protocol.md, "Researcher messages" and
// "Graph jobs"): builders that write the exact wire fields, and parsers that validate every field
// of a hostile control object. Pure functions on values; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "goblin/core/dtype.hpp"
#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// [rows, cols] on the wire.
struct MatrixShape {
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    friend bool operator==(const MatrixShape&, const MatrixShape&) = default;
};

// → {"type":"submit_matmul","id"[, "tile":[rows,cols]]} + A, B. Parsing checks there are exactly
// two tensors and that a tile has both sizes ≥ 1; shapes and dtypes are the node's to judge.
struct SubmitMatmul {
    std::int64_t id = 0;
    std::optional<MatrixShape> tile; // absent or null: the node chooses
    TensorPtr a;
    TensorPtr b;
    // Or "inputs": [A's upload, B's upload] and no tensor: matrices staged in row blocks
    // (upload_messages.hpp).
    std::vector<std::string> uploads;
    bool stream = false; // "stream": true asks for the accepted tiles as they come
};

// → {"type":"submit_graph","id","graph":{…}[, "batch":{…}]} + the graph's inputs. The graph and
// the batch stay JSON (core::graph decodes them); parsing checks that they are objects, with
// InvalidInput as the node has always answered.
struct SubmitGraph {
    std::int64_t id = 0;
    boost::json::object graph;
    std::optional<boost::json::object> batch; // absent or null: no batch split
    std::vector<TensorPtr> inputs;
};

// ← {"type":"job_accepted","id","job","tiles","tile":[r,c],"shape":[m,n],"dtype"[,"delivery"]}.
struct MatmulJobAccepted {
    std::int64_t id = 0;
    std::string job;
    std::int64_t tiles = 0;
    MatrixShape tile;
    MatrixShape shape; // of C
    core::DType dtype = core::DType::F32;
    bool streamed = false; // "delivery": "tiles": each accepted tile comes as a result_tile
};

// ← {"type":"job_accepted","id","job","kind":"graph","tasks"}.
struct GraphJobAccepted {
    std::int64_t id = 0;
    std::string job;
    std::int64_t tasks = 0;
};

// ← {"type":"progress","job","done","total"[, "waiting"]}; `waiting` (optional)
// says why nothing computes the job now (no connected volunteer can take its tasks), and a
// progress without it that the job computes again.
struct Progress {
    std::string job;
    std::int64_t done = 0;
    std::int64_t total = 0;
    std::string waiting; // empty: not written
};

// ← {"type":"job_status","id","job","state","done","total"}; state is running, done, failed or
// cancelled.
struct JobStatus {
    std::int64_t id = 0;
    std::string job;
    std::string state;
    std::int64_t done = 0;
    std::int64_t total = 0;
};

// → {"type":"fetch","id","job"}.
struct Fetch {
    std::int64_t id = 0;
    std::string job;
};

// → {"type":"release","id","job"}.
struct Release {
    std::int64_t id = 0;
    std::string job;
};

// ← {"type":"released","id","job"}.
struct Released {
    std::int64_t id = 0;
    std::string job;
};

// ← {"type":"job_done","id","job","summary":{…}} + the outputs (C, or one per graph output).
// `id` is the fetch's id, or 0 when pushed to a watcher; it is always written. The summary's
// keys differ by job kind (docs/protocol.md) and stay JSON. A matmul product delivered in row
// blocks comes with no tensor and summary "delivery": "rows" (fetch_rows).
struct JobDone {
    std::int64_t id = 0;
    std::string job;
    boost::json::object summary;
    std::vector<TensorPtr> outputs;
};

// ← {"type":"job_failed","job","code","message"}.
struct JobFailed {
    std::string job;
    Error error;
};

// → {"type":"audit","id","job"}: what audits after delivery found about a job.
struct Audit {
    std::int64_t id = 0;
    std::string job;
};

// One audit of a delivered job, started because a volunteer whose results the job used was
// quarantined afterwards. state: rechecking, stands (the node's recomputation agrees), corrected
// (the node's outputs replaced the volunteers'), unverifiable (the job's data was already deleted).
struct JobAuditEntry {
    std::string volunteer;
    std::string reason; // why the volunteer was quarantined
    std::string state;
    std::int64_t tasks = 0;     // tasks of the job that used its results
    std::int64_t corrected = 0; // of those, tasks whose outputs the node replaced
    double at = 0;              // when the audit started (seconds since the epoch)
};

// ← {"type":"audit_report","id","job","state","audits":[…]} + the job's outputs as they are
// now, only when an audit corrected them. state: clean (no audit), or the most urgent of the
// audits' (rechecking, unverifiable, corrected, stands). id 0 when pushed as an audit ends.
struct AuditReport {
    std::int64_t id = 0;
    std::string job;
    std::string state;
    std::vector<JobAuditEntry> audits; // at most kMaxAuditEntries
    std::vector<TensorPtr> outputs;
};
inline constexpr std::size_t kMaxAuditEntries = 256;

// → {"type":"submit_train","id","graph":{…},"train":{…},"tensors":N} + the graph's inputs (x and
// y with every sample), then the optimizer state to resume from. The node checks the
// graph and `train` (labnode/train/train_submission.hpp); this parser only their presence.
struct SubmitTrain {
    std::int64_t id = 0;
    boost::json::object graph;
    boost::json::object train;
    std::vector<TensorPtr> tensors;
};

// ← {"type":"job_accepted","id","job","kind":"train","rounds"}.
struct TrainJobAccepted {
    std::int64_t id = 0;
    std::string job;
    std::int64_t rounds = 0;
};

// ← {"type":"train_round","job","round":{…}}: one committed round of a training job (its record:
// round, loss, grad_norm, tasks, verified_tasks, rejected, node_audited, node_decided, seconds,
// verification_seconds, graph_job).
struct TrainRound {
    std::string job;
    boost::json::object record;
};

Message toMessage(const SubmitMatmul& submit);
Message toMessage(const SubmitGraph& submit);
Message toMessage(const MatmulJobAccepted& accepted);
Message toMessage(const GraphJobAccepted& accepted);
Message toMessage(const Progress& progress);
Message toMessage(const JobStatus& status);
Message toMessage(const Fetch& fetch);
Message toMessage(const Release& release);
Message toMessage(const Released& released);
Message toMessage(const JobDone& done);
Message toMessage(const JobFailed& failed);
Message toMessage(const Audit& audit);
Message toMessage(const AuditReport& report);
Message toMessage(const SubmitTrain& submit);
Message toMessage(const TrainJobAccepted& accepted);
Message toMessage(const TrainRound& round);

// Each parser checks "type" and every field; errors are InvalidMessage naming the field unless
// the struct's comment says otherwise. A request's "id" is optional (0 when absent).
[[nodiscard]] Expected<SubmitMatmul> parseSubmitMatmul(const Message& message);
// submit_matmul's "inputs" (empty when absent): two upload ids, and then the message has no tensor.
[[nodiscard]] Expected<std::vector<std::string>> stagedInputs(const Message& message);
[[nodiscard]] Expected<SubmitGraph> parseSubmitGraph(const Message& message);
// job_accepted of either kind: "kind":"graph" selects the graph form.
[[nodiscard]] bool isGraphJobAccepted(const boost::json::object& control);
[[nodiscard]] Expected<MatmulJobAccepted>
parseMatmulJobAccepted(const boost::json::object& control);
[[nodiscard]] Expected<GraphJobAccepted> parseGraphJobAccepted(const boost::json::object& control);
[[nodiscard]] Expected<Progress> parseProgress(const boost::json::object& control);
[[nodiscard]] Expected<JobStatus> parseJobStatus(const boost::json::object& control);
[[nodiscard]] Expected<Fetch> parseFetch(const boost::json::object& control);
[[nodiscard]] Expected<Release> parseRelease(const boost::json::object& control);
[[nodiscard]] Expected<Released> parseReleased(const boost::json::object& control);
[[nodiscard]] Expected<JobDone> parseJobDone(const Message& message);
[[nodiscard]] Expected<JobFailed> parseJobFailed(const boost::json::object& control);
[[nodiscard]] Expected<Audit> parseAudit(const boost::json::object& control);
[[nodiscard]] Expected<AuditReport> parseAuditReport(const Message& message);
[[nodiscard]] Expected<SubmitTrain> parseSubmitTrain(const Message& message);
// job_accepted with "kind":"train".
[[nodiscard]] bool isTrainJobAccepted(const boost::json::object& control);
[[nodiscard]] Expected<TrainJobAccepted> parseTrainJobAccepted(const boost::json::object& control);
[[nodiscard]] Expected<TrainRound> parseTrainRound(const boost::json::object& control);

} // namespace goblin::net
