// The volunteer side of the hello: validating advertised capabilities, and admitting a volunteer —
// registering a new one or checking a returning one's id and secret against the store.
// Called on the core thread (it uses the NodeStore).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/core/random_source.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode {

struct VolunteerCapabilities {
    std::string backend;
    int slots = 1;
    std::int64_t memoryBytes = 0;
    std::set<std::string> dtypes;
    bool graphs = false; // lists op "graph" (the node also needs its hello's catalog ≥ 3)
    std::int64_t inputCacheBytes = 0; // "input_cache_bytes" (0 when absent)
};

Expected<VolunteerCapabilities> parseCapabilities(const boost::json::object& hello);

struct Admission {
    std::string volunteerId;
    std::optional<std::string> newSecret; // set when the volunteer registered just now
};

// identity null: a new volunteer with a fresh id and secret (only the secret's hash is stored).
// Otherwise the id must exist, the secret must match, and the volunteer must not be banned.
Expected<Admission> admitVolunteer(const boost::json::object& hello, NodeStore& store,
                                   core::RandomSource& random, double now);

} // namespace goblin::labnode
