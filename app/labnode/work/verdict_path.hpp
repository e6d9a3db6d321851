// The one place verdicts are committed: a batch of verdict records (and whatever the job kind must
// write with them, e.g. a graph task's outputs) goes into one transaction; only after it commits
// are the volunteers told and the kind's follow-up run. `enqueue` groups the batches that arrive in
// one burst into one transaction (tiles); `commitNow` commits at once (graph decisions). Core
// thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "work/verdict.hpp"

namespace goblin::labnode {

struct VerdictBatch {
    struct Entry {
        std::uint64_t peer = 0; // the connection to tell (0: nobody, e.g. it left)
        VerdictRecord record;
    };
    std::vector<Entry> verdicts;
    std::function<Expected<void>(Database&)> alsoWrite; // in the same transaction
    // After the commit, once the volunteers were told; and when nothing was written. Each gets
    // the batch itself, so its records need not be copied into the callbacks.
    std::function<void(const VerdictBatch&)> committed;
    std::function<void(const VerdictBatch&, const Error&)> failed;
};

class VerdictPath {
public:
    VerdictPath(NodeContext& context, PeerRegistry& peers) : m_context(context), m_peers(peers) {}

    void enqueue(VerdictBatch batch);
    void commitNow(VerdictBatch batch);
    void sendStale(std::uint64_t peer, std::int64_t task, std::int64_t attempt);
    // Sees every committed verdict, after its batch's follow-up ran (trust keeps its history).
    void setObserver(std::function<void(const VerdictRecord&)> observer) {
        m_observer = std::move(observer);
    }

private:
    void flush();
    void commit(std::vector<VerdictBatch> batches);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    std::vector<VerdictBatch> m_pending;
    bool m_flushPosted = false;
    std::function<void(const VerdictRecord&)> m_observer;
};

} // namespace goblin::labnode
