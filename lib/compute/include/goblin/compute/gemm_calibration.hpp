// Bounded, time-limited search for CLBlast Xgemm parameters on one device (CLBlast has no tuning
// entry for many devices, e.g. PoCL and AMD CPUs). The candidates are data: a few hand-picked sets
// (kernels/xgemm_candidates.txt) first, then a grid filtered by CLBlast's own constraints.
// calibrateGemm runs on the thread that owns the backend; the rest are pure functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "goblin/compute/opencl_backend.hpp"

namespace goblin::compute {

struct CalibrationOptions {
    double timeLimitSeconds = 60.0; // the search stops at the first candidate past this
    std::int64_t size = 1024;       // N of the N×N×N product timed per candidate
    std::function<void(const std::string&)> progress; // one line per candidate; may be empty
    // Candidates to try instead of xgemmCandidates() (tests); empty: the usual list.
    std::vector<GemmParameters> candidates;
};

struct CalibrationResult {
    core::DType dtype = core::DType::F32;
    double defaultGflops = 0.0;
    double bestGflops = 0.0;
    GemmParameters best; // empty when CLBlast's own parameters stayed fastest
    int tried = 0;
    int failed = 0; // candidates the device refused (compile or launch errors)
    int wrong = 0;  // candidates whose product broke the sound bound (never kept)
};

// Candidates valid for a device (work-group size and local memory) and dtype, in trial order.
std::vector<GemmParameters> xgemmCandidates(const OpenClDeviceInfo& device, core::DType dtype);

// Times CLBlast's parameters, then candidates until the time limit, and leaves the fastest
// applied to the device. Every candidate's product is first checked against the CPU backend
// under the sound bound: a fast set that computes wrong is never kept (it happens: see
// tuning/xgemm_candidates.txt). UnsupportedDtype for f64 on a device without fp64.
[[nodiscard]] Expected<CalibrationResult> calibrateGemm(OpenClBackend& backend, core::DType dtype,
                                                        const CalibrationOptions& options);

// "GEMMK=0 KREG=1 …" and back; parse fails (InvalidInput) on anything but NAME=number pairs.
std::string formatGemmParameters(const GemmParameters& parameters);
[[nodiscard]] Expected<GemmParameters> parseGemmParameters(const std::string& text);

} // namespace goblin::compute
