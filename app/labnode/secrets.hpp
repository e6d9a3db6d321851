// Random access tokens and volunteer secrets, and the hashes the node stores instead of them.
// Pure functions; safe on any thread.
#pragma once

#include <random>
#include <string>

namespace goblin::labnode {

// 32 random bytes from the OS CSPRNG, hex-encoded.
std::string newSecret();
// A public identifier: prefix + 16 hex digits from the given generator (not a secret).
std::string randomId(const std::string& prefix, std::mt19937_64& random);
// SHA-256 hex of a secret: the only form secrets are stored in.
std::string hashSecret(const std::string& secret);

} // namespace goblin::labnode
