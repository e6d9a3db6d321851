#include "column_probe_cache.hpp"

namespace goblin::labnode {

std::shared_ptr<const verify::ColumnProbe>
ColumnProbeCache::probeFor(std::int64_t col0, const core::MatrixView& bColumns) {
    std::shared_ptr<Entry> entry;
    {
        std::lock_guard lock(m_mutex);
        auto& slot = m_entries[col0];
        if (!slot)
            slot = std::make_shared<Entry>();
        entry = slot;
    }
    // Only workers that need this block wait for it to be made.
    std::lock_guard lock(entry->mutex);
    if (!entry->probe) {
        // A different stream of vectors per block (splitmix64 step of the job's seed).
        std::uint64_t seed = m_seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(col0 + 1);
        seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ULL;
        seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebULL;
        entry->probe = std::make_shared<const verify::ColumnProbe>(verify::probeColumns(
            bColumns, verify::MatmulCheckOptions{m_vectors, seed ^ (seed >> 31)}));
    }
    return entry->probe;
}

} // namespace goblin::labnode
