// The scheduling priority of the volunteer's compute: Low (the default) puts a thread at nice 19
// and in the idle I/O class, so the machine's own work always comes first; Normal leaves it as
// started. Linux priorities are per thread and inherited by threads created later. Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "goblin/core/error.hpp"

namespace goblin::volunteer {

enum class ComputePriority { Low, Normal };

// "low" or "normal"; empty for anything else.
std::optional<ComputePriority> parseComputePriority(std::string_view text);

// Lowers the calling thread (nice 19, idle I/O class). Already that low (e.g. under a systemd
// unit with Nice=19 and IOSchedulingClass=idle, which may forbid the calls) is success.
Expected<void> lowerThisThread();

// Lowers every other thread of the process that runs now (e.g. the BLAS library's pool, started
// before main) except `keep` (a thread id, e.g. the I/O thread's). Returns how many were lowered.
Expected<int> lowerThreadsExcept(long keep);

// The calling thread's id (gettid).
long currentThreadId();

// Names the calling thread (at most 15 characters show in /proc/<pid>/task/<tid>/comm).
void nameThisThread(const std::string& name);

} // namespace goblin::volunteer
