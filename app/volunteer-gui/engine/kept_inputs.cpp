#include "kept_inputs.hpp"

#include "goblin/net/content_digest.hpp"

namespace goblin::volunteer {

Expected<std::vector<net::TensorPtr>> KeptInputs::resolve(const net::GraphTask& task) {
    if (task.inputRefs.empty())
        return task.inputs;
    // Checked whole before anything is kept: a refused task leaves the cache as it was.
    std::vector<net::TensorPtr> inputs;
    std::map<std::string, net::TensorPtr> keep;
    std::int64_t adding = 0;
    std::size_t next = 0; // the next tensor that came
    for (const auto& ref : task.inputRefs) {
        if (!ref || ref->keep) {
            if (next >= task.inputs.size())
                return makeError(ErrorCode::InvalidMessage,
                                 "input_refs name more tensors than came");
            inputs.push_back(task.inputs[next++]);
            if (!ref)
                continue;
            if (net::tensorDigest(*inputs.back()) != ref->digest)
                return makeError(ErrorCode::InvalidMessage,
                                 "an input does not match the digest it is to be kept under");
            if (!m_kept.contains(ref->digest) && keep.emplace(ref->digest, inputs.back()).second)
                adding += static_cast<std::int64_t>(inputs.back()->byteSize());
            continue;
        }
        if (auto kept = m_kept.find(ref->digest); kept != m_kept.end()) {
            inputs.push_back(kept->second);
        } else if (auto added = keep.find(ref->digest); added != keep.end()) {
            inputs.push_back(added->second);
        } else {
            return makeError(ErrorCode::InvalidMessage,
                             std::string("input ")
                                 .append(ref->digest, 0, 12)
                                 .append("… is not kept here (the node's record of this "
                                         "volunteer's inputs is wrong)"));
        }
    }
    if (m_held + adding > m_budget)
        return makeError(ErrorCode::LimitExceeded,
                         "keeping this task's inputs would pass the announced input_cache_bytes");
    for (auto& [digest, tensor] : keep)
        m_kept.emplace(digest, std::move(tensor));
    m_held += adding;
    return inputs;
}

void KeptInputs::forget(const std::vector<std::string>& digests) {
    for (const std::string& digest : digests) {
        auto kept = m_kept.find(digest);
        if (kept == m_kept.end())
            continue;
        m_held -= static_cast<std::int64_t>(kept->second->byteSize());
        m_kept.erase(kept);
    }
}

void KeptInputs::clear() {
    m_kept.clear();
    m_held = 0;
}

} // namespace goblin::volunteer
