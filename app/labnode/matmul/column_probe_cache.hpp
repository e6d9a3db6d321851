// The Freivalds column probes of one job: B·r for a block of B's columns is made once, by
// whichever worker first verifies a tile of that block, and shared by every tile of the block
// (B is then read once per column block, not once per tile). The random vectors stay at the node.
// Thread-safe: workers call probeFor() concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "goblin/verify/matmul_check.hpp"

namespace goblin::labnode {

class ColumnProbeCache {
public:
    ColumnProbeCache(std::uint64_t seed, int vectors) : m_seed(seed), m_vectors(vectors) {}

    // The probe of the column block starting at col0; bColumns is that block of B.
    std::shared_ptr<const verify::ColumnProbe> probeFor(std::int64_t col0,
                                                        const core::MatrixView& bColumns);

private:
    struct Entry {
        std::mutex mutex;
        std::shared_ptr<const verify::ColumnProbe> probe;
    };

    std::mutex m_mutex;
    std::map<std::int64_t, std::shared_ptr<Entry>> m_entries;
    std::uint64_t m_seed;
    int m_vectors;
};

} // namespace goblin::labnode
