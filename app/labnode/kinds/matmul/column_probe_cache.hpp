// The Freivalds column probes of one job: the random vectors and B·r for a block of B's columns
// are made once, by whichever worker first verifies a tile of that block, and shared by every tile
// of the block (B is then read once per column block, not once per tile). The vectors come from
// the node's CSPRNG and never leave the node. Thread-safe: workers call probeFor() concurrently
// (the random source must be thread-safe too, as core::SecureRandom is).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "goblin/core/random_source.hpp"
#include "goblin/verify/matmul_check.hpp"
#include "store/blob_store.hpp"

namespace goblin::labnode {

class ColumnProbeCache {
public:
    ColumnProbeCache(core::RandomSource& random, verify::MatmulCheckOptions options)
        : m_random(random), m_options(options) {}

    // The probe of the column block starting at col0; bColumns is that block of B, a view into
    // `mapped` when given (then read in chunks that leave the node's memory: MappedFile::copyOut).
    std::shared_ptr<const verify::ColumnProbe> probeFor(std::int64_t col0,
                                                        const core::MatrixView& bColumns,
                                                        const MappedFile* mapped = nullptr);

private:
    struct Entry {
        std::mutex mutex;
        std::shared_ptr<const verify::ColumnProbe> probe;
    };

    std::mutex m_mutex;
    std::map<std::int64_t, std::shared_ptr<Entry>> m_entries;
    core::RandomSource& m_random;
    verify::MatmulCheckOptions m_options;
};

} // namespace goblin::labnode
