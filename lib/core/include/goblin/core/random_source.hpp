// Where randomness comes from: the node's CSPRNG (OpenSSL's RAND_bytes) for everything a volunteer
// must not predict (Freivalds vectors, audit choices, identities), or a seeded generator that
// tests inject so they are repeatable. SecureRandom is thread-safe; SeededRandom is one thread's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace goblin::core {

class RandomSource {
public:
    virtual ~RandomSource() = default;
    // Fills `bytes` with random bytes (aborts the process if the CSPRNG fails: nothing may go on
    // with guessable randomness).
    virtual void fill(std::span<std::byte> bytes) = 0;

    std::uint64_t next64();
    // Uniform in [0, 1), 53 random bits.
    double uniform01();
    // True with probability p (clamped to [0, 1]); p = 1 is always true, p = 0 never.
    bool chance(double p);
};

// OpenSSL's RAND_bytes.
class SecureRandom final : public RandomSource {
public:
    void fill(std::span<std::byte> bytes) override;
};

// splitmix64 from a seed: deterministic, for tests and reproducible benchmarks only.
class SeededRandom final : public RandomSource {
public:
    explicit SeededRandom(std::uint64_t seed) : m_state(seed) {}
    void fill(std::span<std::byte> bytes) override;

private:
    std::uint64_t m_state;
};

} // namespace goblin::core
