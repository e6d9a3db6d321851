// Acts on bans lab staff record with `goblin-labnode volunteers ban|unban` while the node runs:
// the coordinator calls check() from its two-second database check. A new ban quarantines the
// volunteer (TrustBook closes its connections, drops its undecided results, rechecks what it
// touched); a lifted one makes the trust book re-read it. Core thread only.
#pragma once

#include <set>
#include <string>

#include "node/node_context.hpp"
#include "node/trust_book.hpp"

namespace goblin::labnode {

class BanWatch {
public:
    BanWatch(NodeContext& context, TrustBook& trust) : m_context(context), m_trust(trust) {}
    void check();

private:
    NodeContext& m_context;
    TrustBook& m_trust;
    std::set<std::string> m_banned; // bans acted on, to notice when one is lifted
};

} // namespace goblin::labnode
