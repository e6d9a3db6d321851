#include "node_shares.hpp"

#include <algorithm>
#include <numeric>

#include "goblin/net/ws_url.hpp"

namespace goblin::volunteer {

std::optional<QString> nodeUrlProblem(const QString& url) {
    if (url.trimmed().isEmpty())
        return QStringLiteral("Type the lab node's address, e.g. wss://lab.example.org:8765.");
    auto parsed = net::parseWsUrl(url.trimmed().toStdString());
    if (!parsed)
        return QStringLiteral("Not a lab node address: %1.")
            .arg(QString::fromStdString(parsed.error().message));
    return std::nullopt;
}

std::vector<int> sharePercents(const std::vector<AttachedNode>& nodes) {
    const int total =
        std::accumulate(nodes.begin(), nodes.end(), 0, [](int sum, const AttachedNode& node) {
            return sum + std::clamp(node.share, 1, kMaxShare);
        });
    std::vector<int> percents;
    for (const AttachedNode& node : nodes)
        percents.push_back(std::max(1, (100 * std::clamp(node.share, 1, kMaxShare) + total / 2) /
                                           std::max(1, total)));
    return percents;
}

ComputePlan planForShare(const ComputePlan& whole, int percent) {
    ComputePlan plan = whole;
    plan.dutyPercent = std::clamp((whole.dutyPercent * percent + 50) / 100, 1, 100);
    return plan;
}

} // namespace goblin::volunteer
