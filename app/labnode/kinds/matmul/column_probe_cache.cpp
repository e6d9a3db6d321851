#include "kinds/matmul/column_probe_cache.hpp"

#include <optional>

namespace goblin::labnode {

std::shared_ptr<const verify::ColumnProbe>
ColumnProbeCache::probeFor(std::int64_t col0, const core::MatrixView& bColumns,
                           const MappedFile* mapped) {
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
    if (entry->probe)
        return entry->probe;
    std::optional<core::Tensor> copied; // a copy failing to allocate reads the mapping instead
    if (mapped)
        if (auto copy = mapped->copyOut(bColumns))
            copied = std::move(*copy);
    const core::MatrixView source = copied ? core::viewOf(*copied) : bColumns;
    entry->probe = std::make_shared<const verify::ColumnProbe>(
        verify::probeColumns(source, m_options, m_random));
    return entry->probe;
}

} // namespace goblin::labnode
