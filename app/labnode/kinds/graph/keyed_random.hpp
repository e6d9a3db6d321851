// A worker's own random stream: the ChaCha20 keystream (OpenSSL) under a 32-byte key drawn from the
// node's CSPRNG on the core thread, so work posted to the pool never shares the node's source (a
// test's SeededRandom is one thread's). Unpredictable to volunteers as long as the key is. One
// thread's; not copyable.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "goblin/core/random_source.hpp"

struct evp_cipher_ctx_st; // OpenSSL's EVP_CIPHER_CTX

namespace goblin::labnode {

class KeyedRandom final : public core::RandomSource {
public:
    using Key = std::array<std::byte, 32>;
    static Key drawKey(core::RandomSource& random);

    explicit KeyedRandom(const Key& key);
    ~KeyedRandom() override;
    KeyedRandom(const KeyedRandom&) = delete;
    KeyedRandom& operator=(const KeyedRandom&) = delete;

    void fill(std::span<std::byte> bytes) override;

private:
    evp_cipher_ctx_st* m_cipher;
};

} // namespace goblin::labnode
