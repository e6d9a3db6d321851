// Explicit limits of a connection, enforced before allocation (docs/protocol.md, "Limits").
// Plain values; safe on any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "goblin/core/ops/op_code.hpp"

namespace goblin::net {

// Version 2 added audit and audit_report, version 3 submit_train and train_round, version 4
// cancel/cancelled and list_jobs/job_list (researchers), and task inputs named by digest with
// forget_inputs (volunteers that announce input_cache_bytes), version 5 train_batch and
// batch_accepted (a training job's streamed data) , fetch_rows/result_rows (products in row
// blocks) and upload, upload_rows, drop_upload with their replies (matrices in row blocks), version
// 6 result_tile (a product's accepted tiles pushed while the job runs, to a submit that asked),
// version 7 check_quota and quota (a job's size checked against the researcher's quota first),
// version 8 plan_graph and graph_plan (how a graph job would be cut, before it is sent), version 9
// a graph task's gemm_nodes may name conv2d gradient nodes (volunteers that speak 9 compute them
// with any GEMM; older ones are never sent such a task), version 10 a graph task's omit_witnesses
// (the volunteer leaves the witnesses out of its result: another replica carries them).
// Every version-1 message is unchanged, so the node still admits peers that speak an older version;
// it answers in the version the peer spoke.
inline constexpr int kProtocolVersion = 10;
inline constexpr int kOldestProtocolVersion = 1;
// Catalog versions a peer may speak: 1 is the matmul tile op alone, 3 adds op graphs (docs/ops.md).
// A peer's hello states the highest catalog it runs; the node sends it only what that covers.
// The highest is core's op-catalog version: one constant for the node, the volunteer and the
// protocol doc's examples (tests/net/test_protocol_doc.cpp checks the doc).
inline constexpr int kMatmulCatalogVersion = 1;
inline constexpr int kCatalogVersion = core::ops::kCatalogVersion;

struct Limits {
    std::size_t maxControlBytes = 64 * 1024;
    // Once the peer is authenticated (and always on the client side): graph jobs carry their graph
    // as JSON in the control frame.
    std::size_t maxAuthenticatedControlBytes = std::size_t{4} << 20;
    std::size_t maxTensorBytes = std::size_t{1} << 30;
    std::size_t maxTensorsPerMessage = 64;
    std::int64_t maxTiles = 1'000'000;
    std::chrono::seconds handshakeTimeout{10};
    std::chrono::seconds idleTimeout{60};
    int maxConnectionsPerAddress = 64;
};

} // namespace goblin::net
