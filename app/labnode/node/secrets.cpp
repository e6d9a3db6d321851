#include "node/secrets.hpp"

#include <stdexcept>

#include <openssl/rand.h>

#include "goblin/net/content_digest.hpp"

namespace goblin::labnode {

std::string newSecret() {
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        throw std::runtime_error("the system random generator failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char byte : bytes) {
        hex.push_back(kHex[byte >> 4]);
        hex.push_back(kHex[byte & 15]);
    }
    return hex;
}

std::string randomId(const std::string& prefix, core::RandomSource& random) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = prefix;
    std::uint64_t bits = random.next64();
    for (int i = 0; i < 16; ++i, bits >>= 4)
        id.push_back(kHex[bits & 15]);
    return id;
}

std::string hashSecret(const std::string& secret) {
    return net::sha256Hex(std::as_bytes(std::span(secret.data(), secret.size())));
}

} // namespace goblin::labnode
