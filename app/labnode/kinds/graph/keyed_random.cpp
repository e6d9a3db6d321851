#include "kinds/graph/keyed_random.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <openssl/evp.h>

namespace goblin::labnode {

KeyedRandom::Key KeyedRandom::drawKey(core::RandomSource& random) {
    Key key;
    random.fill(key);
    return key;
}

KeyedRandom::KeyedRandom(const Key& key) : m_cipher(EVP_CIPHER_CTX_new()) {
    const std::array<unsigned char, 16> iv{}; // one key, one stream: a zero nonce is fine
    if (m_cipher == nullptr ||
        EVP_EncryptInit_ex(m_cipher, EVP_chacha20(), nullptr,
                           reinterpret_cast<const unsigned char*>(key.data()), iv.data()) != 1)
        std::abort(); // nothing may go on with guessable randomness
}

KeyedRandom::~KeyedRandom() {
    EVP_CIPHER_CTX_free(m_cipher);
}

void KeyedRandom::fill(std::span<std::byte> bytes) {
    // The keystream is the encryption of zeros.
    constexpr std::size_t kChunk = 4096;
    const std::vector<unsigned char> zeros(kChunk, 0);
    for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
        const int length = static_cast<int>(std::min(kChunk, bytes.size() - at));
        int written = 0;
        if (EVP_EncryptUpdate(m_cipher, reinterpret_cast<unsigned char*>(bytes.data() + at),
                              &written, zeros.data(), length) != 1 ||
            written != length)
            std::abort();
    }
}

} // namespace goblin::labnode
