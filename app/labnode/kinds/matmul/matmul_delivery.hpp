// Delivery of a finished matmul job: the summary (from its recorded verdicts) and the product,
// read back from the result file on a worker — O(size) — and sent from there; a product over
// wholeProductBytes() goes in row blocks the researcher fetches (fetch_rows), so no
// message and no buffer at either end holds more than a block. Called on core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "goblin/net/messages/row_block_messages.hpp"
#include "node/node_context.hpp"
#include "node/peer_link.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode {

// The largest product delivered whole under a tensor limit of `maxTensorBytes`.
inline std::size_t wholeProductBytes(std::size_t maxTensorBytes) {
    return std::min(net::kWholeProductBytes, maxTensorBytes);
}

// `streamed`: the researcher got every tile as it was accepted; job_done says "delivery": "tiles"
// and carries no product (sent from core, after those tiles).
void deliverMatmulResult(NodeContext& context, std::shared_ptr<PeerLink> link, const JobRecord& job,
                         std::int64_t requestId, std::size_t maxTensorBytes, bool streamed = false);

// Rows of a done job's product (checked: inside C, at most maxTensorBytes), sent as result_rows.
Expected<void> deliverMatmulRows(NodeContext& context, std::shared_ptr<PeerLink> link,
                                 const JobRecord& job, const net::FetchRows& fetch,
                                 std::size_t maxTensorBytes);

} // namespace goblin::labnode
