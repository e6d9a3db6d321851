#include "work/verdict_path.hpp"

#include "goblin/net/messages/volunteer_messages.hpp"
#include <boost/asio/post.hpp>

#include "store/verdict_store.hpp"

namespace goblin::labnode {

net::Message verdictMessage(std::int64_t task, std::int64_t attempt, VerdictWord verdict) {
    const net::Verdict word = verdict == VerdictWord::Accepted   ? net::Verdict::Accepted
                              : verdict == VerdictWord::Rejected ? net::Verdict::Rejected
                                                                 : net::Verdict::Stale;
    return net::toMessage(net::TaskVerdict{net::TaskRef{task, attempt}, word});
}

void VerdictPath::enqueue(VerdictBatch batch) {
    m_pending.push_back(std::move(batch));
    if (m_flushPosted)
        return;
    m_flushPosted = true;
    boost::asio::post(m_context.core, [this] { flush(); });
}

void VerdictPath::commitNow(VerdictBatch batch) {
    std::vector<VerdictBatch> batches;
    batches.push_back(std::move(batch));
    commit(std::move(batches));
}

void VerdictPath::sendStale(std::uint64_t peer, std::int64_t task, std::int64_t attempt) {
    m_peers.send(peer, verdictMessage(task, attempt, VerdictWord::Stale));
}

void VerdictPath::flush() {
    m_flushPosted = false;
    std::vector<VerdictBatch> batches;
    batches.swap(m_pending);
    if (!batches.empty())
        commit(std::move(batches));
}

void VerdictPath::commit(std::vector<VerdictBatch> batches) {
    Database& db = m_context.store.database();
    const double now = m_context.clock();
    auto written = [&]() -> Expected<void> {
        auto transaction = Transaction::begin(db);
        if (!transaction)
            return tl::unexpected(transaction.error());
        for (const VerdictBatch& batch : batches) {
            for (const VerdictBatch::Entry& entry : batch.verdicts)
                if (auto ok = recordVerdict(db, entry.record, now); !ok)
                    return ok;
            if (batch.alsoWrite)
                if (auto ok = batch.alsoWrite(db); !ok)
                    return ok;
        }
        return transaction->commit();
    }();
    if (!written) {
        for (VerdictBatch& batch : batches)
            if (batch.failed)
                batch.failed(batch, written.error());
        return;
    }
    for (VerdictBatch& batch : batches) {
        for (const VerdictBatch::Entry& entry : batch.verdicts)
            if (entry.peer != 0)
                m_peers.send(entry.peer,
                             verdictMessage(entry.record.task, entry.record.attempt,
                                            entry.record.accepted ? VerdictWord::Accepted
                                                                  : VerdictWord::Rejected));
        if (batch.committed)
            batch.committed(batch);
        if (m_observer)
            for (const VerdictBatch::Entry& entry : batch.verdicts)
                m_observer(entry.record);
    }
}

} // namespace goblin::labnode
