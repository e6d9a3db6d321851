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
    if (!entry->probe)
        entry->probe = std::make_shared<const verify::ColumnProbe>(
            verify::probeColumns(bColumns, m_options, m_random));
    return entry->probe;
}

} // namespace goblin::labnode
