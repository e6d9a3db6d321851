#include "kinds/graph/second_opinion_watch.hpp"

namespace goblin::labnode {

std::vector<std::int64_t>
SecondOpinionWatch::update(const std::map<std::int64_t, std::string>& starving, double now) {
    std::map<std::int64_t, Starving> still;
    std::vector<std::int64_t> due;
    for (const auto& [task, why] : starving) {
        auto known = m_starving.find(task);
        Starving entry{known == m_starving.end() ? now : known->second.since, why};
        if (now - entry.since >= m_wait)
            due.push_back(task);
        else
            still.emplace(task, std::move(entry));
    }
    m_starving = std::move(still);
    return due;
}

std::optional<SecondOpinionWatch::Starving> SecondOpinionWatch::starving(std::int64_t task) const {
    auto found = m_starving.find(task);
    if (found == m_starving.end())
        return std::nullopt;
    return found->second;
}

} // namespace goblin::labnode
