#include "goblin/core/random_source.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <openssl/rand.h>

namespace goblin::core {

std::uint64_t RandomSource::next64() {
    std::uint64_t value = 0;
    fill(std::as_writable_bytes(std::span(&value, 1)));
    return value;
}

double RandomSource::uniform01() {
    return static_cast<double>(next64() >> 11) * 0x1p-53;
}

bool RandomSource::chance(double p) {
    if (!(p > 0.0))
        return false;
    if (p >= 1.0)
        return true;
    return uniform01() < p;
}

void SecureRandom::fill(std::span<std::byte> bytes) {
    while (!bytes.empty()) {
        const std::size_t count = std::min<std::size_t>(bytes.size(), INT_MAX);
        if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(count)) !=
            1) {
            std::fputs("goblin: the system random generator failed\n", stderr);
            std::abort();
        }
        bytes = bytes.subspan(count);
    }
}

void SeededRandom::fill(std::span<std::byte> bytes) {
    while (!bytes.empty()) {
        // splitmix64
        std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        const std::size_t count = std::min(bytes.size(), sizeof z);
        std::memcpy(bytes.data(), &z, count);
        bytes = bytes.subspan(count);
    }
}

} // namespace goblin::core
