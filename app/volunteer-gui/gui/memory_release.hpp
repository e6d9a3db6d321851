// Gives freed memory back to the system once the engines go idle (GUI thread). A finished task
// frees its tensors, but glibc keeps the pages of freed blocks in its arenas (the compute and
// network threads each have one) for reuse: a volunteer idle between jobs would otherwise hold
// its largest job's footprint. After work stops for a moment, malloc_trim returns them.
#pragma once

#include <QObject>
#include <QTimer>

#include <functional>

namespace goblin::volunteer {

// malloc_trim(0) on glibc; nothing elsewhere.
void releaseFreedMemory();

class MemoryRelease : public QObject {
    Q_OBJECT
public:
    // release: what returns the memory (tests count calls); quietMs: idle this long first.
    explicit MemoryRelease(std::function<void()> release = releaseFreedMemory, int quietMs = 2000,
                           QObject* parent = nullptr);
    // From each status: whether any task is held or running.
    void setBusy(bool busy);
    int releases() const { return m_releases; }

private:
    std::function<void()> m_release;
    QTimer m_quiet;
    bool m_busy = false;
    int m_releases = 0;
};

} // namespace goblin::volunteer
