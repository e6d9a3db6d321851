// The graph inputs a volunteer keeps by digest for the connection it got them on (docs/protocol.md,
// "Inputs by digest"): the node says what to keep (an input_refs entry with "keep") and what to
// drop (forget_inputs); this side checks every kept tensor against its digest and never holds more
// than the "input_cache_bytes" it announced. IO thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"

namespace goblin::volunteer {

class KeptInputs {
public:
    explicit KeptInputs(std::int64_t budgetBytes) : m_budget(budgetBytes) {}

    // Every graph input of the task, in order: the tensors that came, and the kept ones its
    // refs name. Keeps the ones marked "keep". InvalidMessage when a digest does not match its
    // tensor or names nothing kept, LimitExceeded past the budget; nothing is kept then.
    [[nodiscard]] Expected<std::vector<net::TensorPtr>> resolve(const net::GraphTask& task);
    void forget(const std::vector<std::string>& digests);
    void clear();

    std::int64_t budgetBytes() const { return m_budget; }
    std::int64_t heldBytes() const { return m_held; }
    std::size_t size() const { return m_kept.size(); }

private:
    std::int64_t m_budget;
    std::int64_t m_held = 0;
    std::map<std::string, net::TensorPtr> m_kept;
};

} // namespace goblin::volunteer
