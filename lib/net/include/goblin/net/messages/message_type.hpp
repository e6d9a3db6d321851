// The message set of docs/protocol.md: one enumerator per wire `type`, their wire names, and the
// ggml-rpc style tripwire that breaks the build when the set changes without a protocol bump.
// Plain values; safe on any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "goblin/net/limits.hpp"

namespace goblin::net {

// Append only. Variants that share a wire type (the researcher's and the volunteer's hello, a
// matmul or a graph task, result, task_error and job_accepted) share an enumerator.
enum class MessageType {
    Hello,         // client → node: first message on either path
    Welcome,       // node → client: the handshake succeeded
    Error,         // node → researcher: a request failed, the connection stays open
    SubmitMatmul,  // researcher → node: C = A·B
    SubmitGraph,   // researcher → node: a graph job (catalog 3)
    JobAccepted,   // node → researcher: the job is durable
    Progress,      // node → researcher: tasks decided so far
    JobStatus,     // node → researcher: reply to fetch
    Fetch,         // researcher → node: attach to an earlier job
    Release,       // researcher → node: delete the job's blobs
    Released,      // node → researcher: reply to release
    JobDone,       // node → researcher: the verified outputs
    JobFailed,     // node → researcher: the job cannot finish
    Task,          // node → volunteer: compute this (matmul tile or graph chunk)
    Result,        // volunteer → node: the computed outputs
    TaskError,     // volunteer → node: could not compute the task
    Verdict,       // node → volunteer: the task's decision for this attempt
    Audit,         // researcher → node: what later audits found about a delivered job
    AuditReport,   // node → researcher: reply to audit, or pushed when an audit of a job ends
    SubmitTrain,   // researcher → node: a training job
    TrainRound,    // node → researcher: a training job's round committed
    Cancel,        // researcher → node: cancel a job
    Cancelled,     // node → researcher: reply to cancel
    ListJobs,      // researcher → node: the researcher's own jobs
    JobList,       // node → researcher: reply to list_jobs
    ForgetInputs,  // node → volunteer: drop task inputs kept by digest
    TrainBatch,    // researcher → node: a streamed training job's next batch
    BatchAccepted, // node → researcher: reply to train_batch
    FetchRows,     // researcher → node: rows of a done matmul job's product
    ResultRows,    // node → researcher: reply to fetch_rows
    Upload,        // researcher → node: stage a matrix sent in row blocks
    UploadReady,   // node → researcher: reply to upload
    UploadRows,    // researcher → node: the next rows of a staged matrix
    RowsStored,    // node → researcher: reply to upload_rows
    DropUpload,    // researcher → node: delete a staged matrix
    UploadDropped, // node → researcher: reply to drop_upload
    ResultTile,    // node → researcher: an accepted tile of a streamed product
    CheckQuota,    // researcher → node: does a job of this size fit my quota?
    Quota,         // node → researcher: reply to check_quota
    PlanGraph,     // researcher → node: how would this graph job be cut?
    GraphPlan,     // node → researcher: reply to plan_graph
    Count          // not a message
};

inline constexpr std::size_t kMessageTypeCount = static_cast<std::size_t>(MessageType::Count);

// Tripwire: adding, removing or reordering a message without bumping kProtocolVersion (and this
// pair) fails the build.
static_assert(kMessageTypeCount == 41 && kProtocolVersion == 10,
              "the message set changed: bump kProtocolVersion, docs/protocol.md and this assert");

// "hello", "submit_matmul", …; empty for Count.
std::string_view wireName(MessageType type);
std::optional<MessageType> messageTypeFromWire(std::string_view name);

} // namespace goblin::net
