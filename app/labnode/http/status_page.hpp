// GET /status: a plain HTML page for lab staff (jobs, connected volunteers, recent verdicts) built
// from a NodeSnapshot. Every value is HTML-escaped; no scripts, no research data. Pure function.
#pragma once

#include <string>
#include <string_view>

#include "http/node_snapshot.hpp"

namespace goblin::labnode {

// Escapes & < > " ' for text and attribute values.
std::string htmlEscape(std::string_view text);

std::string renderStatusPage(const NodeSnapshot& snapshot);

} // namespace goblin::labnode
