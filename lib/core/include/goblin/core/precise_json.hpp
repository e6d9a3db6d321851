// boost::json parsing with correctly rounded doubles. Boost.JSON before 1.83 may read a double one
// ulp off, so an f64 constant or attribute would not survive the wire bit for bit (found by
// tests/fuzz/fuzz_graph_json.cpp). Every JSON text that comes off the wire (control frames, graph
// JSON) is parsed with it. Pure function; any thread.
#pragma once

#include <boost/json.hpp>

#include <string_view>

namespace goblin::core {

// As boost::json::parse(text, ec, {}, options), but every double is std::from_chars of its text.
boost::json::value parsePrecise(std::string_view text, boost::system::error_code& ec,
                                const boost::json::parse_options& options = {});

} // namespace goblin::core
