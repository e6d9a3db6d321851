#include "kinds/graph/sent_inputs.hpp"

#include <algorithm>

namespace goblin::labnode {

InputPlan SentInputs::plan(const std::string& jobId, const std::vector<net::TensorPtr>& inputs,
                           const std::vector<std::string>& digests) {
    ++m_tick;
    InputPlan plan;
    bool named = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string digest = i < digests.size() ? digests[i] : std::string();
        const auto bytes = static_cast<std::int64_t>(inputs[i]->byteSize());
        if (digest.empty() || m_budget <= 0) {
            plan.refs.emplace_back();
            plan.following.push_back(inputs[i]);
            continue;
        }
        if (auto held = m_entries.find(digest); held != m_entries.end()) {
            held->second.lastUse = m_tick;
            held->second.jobs.insert(jobId);
            plan.refs.push_back(net::InputRef{digest, false});
            named = true;
            continue;
        }
        plan.following.push_back(inputs[i]);
        if (bytes > m_budget || !makeRoom(bytes, plan.forget)) {
            plan.refs.emplace_back();
            continue;
        }
        m_entries.emplace(digest, Entry{bytes, m_tick, {jobId}});
        m_held += bytes;
        plan.refs.push_back(net::InputRef{digest, true});
        named = true;
    }
    if (!named) // nothing to name: the protocol-3 frame, every input in order
        plan.refs.clear();
    return plan;
}

bool SentInputs::makeRoom(std::int64_t bytes, std::vector<std::string>& forget) {
    while (m_held + bytes > m_budget) {
        auto oldest = m_entries.end();
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
            if (it->second.lastUse != m_tick &&
                (oldest == m_entries.end() || it->second.lastUse < oldest->second.lastUse))
                oldest = it;
        if (oldest == m_entries.end())
            return false;
        m_held -= oldest->second.bytes;
        forget.push_back(oldest->first);
        m_entries.erase(oldest);
    }
    return true;
}

std::vector<std::string> SentInputs::forgetJob(const std::string& jobId) {
    std::vector<std::string> dropped;
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        it->second.jobs.erase(jobId);
        if (!it->second.jobs.empty()) {
            ++it;
            continue;
        }
        m_held -= it->second.bytes;
        dropped.push_back(it->first);
        it = m_entries.erase(it);
    }
    return dropped;
}

} // namespace goblin::labnode
