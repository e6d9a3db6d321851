// Typed handshake and error messages (docs/protocol.md, "Handshake"): builders that write the
// exact wire fields, and parsers that validate every field of a hostile control object.
// Pure functions on values; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/limits.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// → /v1/researcher: {"type":"hello","id","protocol","catalog","token"}. A missing token parses as
// an empty one (the node answers that with unauthenticated, not invalid_message).
struct ResearcherHello {
    std::int64_t id = 1;
    std::int64_t protocol = kProtocolVersion;
    std::int64_t catalog = kCatalogVersion;
    std::string token;
};

struct VolunteerIdentity {
    std::string volunteerId; // "volunteer"
    std::string secret;
};

// hello.capabilities of a volunteer. `devices` is informational and stays JSON.
struct Capabilities {
    std::string backend;             // 1–64 bytes
    std::int64_t threads = 0;        // optional on the wire (0 when absent)
    std::int64_t memoryBytes = 0;    // "memory_bytes", ≥ 0
    std::vector<std::string> dtypes; // at most 8 strings kept
    std::vector<std::string> ops;    // e.g. "matmul", "graph"
    std::int64_t slots = 1;          // 1–16
    boost::json::array devices;      // optional; empty when absent
    // "input_cache_bytes" (optional, ≥ 0): graph inputs the volunteer keeps by digest
    // for later tasks, in bytes; 0 or absent: every input travels with every task.
    std::int64_t inputCacheBytes = 0;

    bool runs(std::string_view op) const;
    bool takes(std::string_view dtype) const;
};

// → /v1/volunteer: {"type":"hello","id","protocol","catalog","identity":{…}|null,"capabilities"}.
struct VolunteerHello {
    std::int64_t id = 1;
    std::int64_t protocol = kProtocolVersion;
    std::int64_t catalog = kCatalogVersion;
    std::optional<VolunteerIdentity> identity; // null on first contact
    Capabilities capabilities;
};

// ← {"type":"welcome","id","protocol","catalog","limits":{5 limits}[, "volunteer"][, "secret"]}.
// Only the five wire limits travel; the other Limits fields keep their defaults when parsed.
struct Welcome {
    std::int64_t id = 1;
    std::int64_t protocol = kProtocolVersion;
    std::int64_t catalog = kCatalogVersion;
    Limits limits;
    std::optional<std::string> volunteerId; // volunteers only
    std::optional<std::string> secret;      // only when registered just now
};

// ← {"type":"error","id","code","message"}: a request failed; the connection stays open.
struct ErrorReply {
    std::int64_t id = 0;
    Error error;
};

// The protocol and catalog a hello states, without the rest: either path's first message. A
// missing, non-integer or unspoken protocol (kOldestProtocolVersion to kProtocolVersion) or
// catalog is a VersionMismatch error (close 4002).
struct HelloVersions {
    std::int64_t protocol = 0;
    std::int64_t catalog = 0;
};
[[nodiscard]] Expected<HelloVersions> parseHelloVersions(const boost::json::object& hello);

Message toMessage(const ResearcherHello& hello);
Message toMessage(const VolunteerHello& hello);
Message toMessage(const Welcome& welcome);
Message toMessage(const ErrorReply& reply);

// The five limits of a welcome, as JSON ({"max_control_bytes": …, …}).
boost::json::object limitsJson(const Limits& limits);

// Each parser checks "type" and every field; errors are InvalidMessage naming the field, except
// where a comment says otherwise. Versions are not checked against ours here (see
// parseHelloVersions): a parser reads the wire, the caller decides what it accepts.
[[nodiscard]] Expected<ResearcherHello> parseResearcherHello(const boost::json::object& control);
[[nodiscard]] Expected<VolunteerHello> parseVolunteerHello(const boost::json::object& control);
[[nodiscard]] Expected<Capabilities> parseCapabilities(const boost::json::object& capabilities);
[[nodiscard]] Expected<Welcome> parseWelcome(const boost::json::object& control);
[[nodiscard]] Expected<ErrorReply> parseErrorReply(const boost::json::object& control);

} // namespace goblin::net
