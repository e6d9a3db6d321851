// Delivery of a finished matmul job: the summary (from its recorded verdicts) and the product,
// read back from the result file on a worker — O(size) — and sent from there. Called on core.
#pragma once

#include <cstdint>
#include <memory>

#include "node_context.hpp"
#include "node_store.hpp"
#include "peer_link.hpp"

namespace goblin::labnode {

void deliverMatmulResult(NodeContext& context, std::shared_ptr<PeerLink> link, const JobRecord& job,
                         std::int64_t requestId);

} // namespace goblin::labnode
