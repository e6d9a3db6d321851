// Random access tokens and volunteer secrets, and the hashes the node stores instead of them.
// Pure functions; safe on any thread.
#pragma once

#include <string>

#include "goblin/core/random_source.hpp"

namespace goblin::labnode {

// 32 random bytes from the OS CSPRNG, hex-encoded.
std::string newSecret();
// A public identifier: prefix + 16 hex digits (64 bits) from the node's CSPRNG, so ids are not
// guessable from earlier ones.
std::string randomId(const std::string& prefix, core::RandomSource& random);
// SHA-256 hex of a secret: the only form secrets are stored in.
std::string hashSecret(const std::string& secret);

} // namespace goblin::labnode
