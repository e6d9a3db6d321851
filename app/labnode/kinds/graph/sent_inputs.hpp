// What one volunteer connection holds of the graph inputs the node sent it by digest, as the node
// decides it (docs/protocol.md, "Inputs by digest"): the node alone chooses what the volunteer
// keeps and drops, within the "input_cache_bytes" the volunteer announced, so both sides agree
// without a round trip. Eviction is least recently used. Core thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "goblin/net/message.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"

namespace goblin::labnode {

// How one task frame carries its inputs.
struct InputPlan {
    std::vector<std::optional<net::InputRef>> refs; // empty: every input follows
    std::vector<net::TensorPtr> following;          // the tensors that travel, in order
    std::vector<std::string> forget;                // to drop (forget_inputs) before the task
};

class SentInputs {
public:
    explicit SentInputs(std::int64_t budgetBytes) : m_budget(budgetBytes) {}

    // `digests[i]` empty: input i always travels (a batch slice, or too small to name).
    InputPlan plan(const std::string& jobId, const std::vector<net::TensorPtr>& inputs,
                   const std::vector<std::string>& digests);
    // The job ended: the digests only it used, now dropped here (send them in a forget_inputs).
    std::vector<std::string> forgetJob(const std::string& jobId);

    std::int64_t heldBytes() const { return m_held; }
    bool holds(const std::string& digest) const { return m_entries.contains(digest); }

private:
    struct Entry {
        std::int64_t bytes = 0;
        std::uint64_t lastUse = 0;
        std::set<std::string> jobs;
    };
    // Frees room for `bytes` by dropping the least recently used entries not used by the frame
    // being planned (lastUse == m_tick); false when that cannot make room.
    bool makeRoom(std::int64_t bytes, std::vector<std::string>& forget);

    std::int64_t m_budget;
    std::int64_t m_held = 0;
    std::uint64_t m_tick = 0;
    std::map<std::string, Entry> m_entries;
};

} // namespace goblin::labnode
