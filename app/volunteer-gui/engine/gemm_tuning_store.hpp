// CLBlast GEMM parameters found by `--calibrate`, kept per device + driver version and dtype in
// <config>/clblast-tuning.json, so a driver update or another card never gets stale values.
// Used by one thread at a time (start-up and the calibrate command).
#pragma once

#include <filesystem>
#include <optional>

#include "goblin/compute/opencl_backend.hpp"

namespace goblin::volunteer {

struct StoredTuning {
    compute::GemmParameters parameters;
    double gflops = 0.0;        // measured with them at calibration
    double defaultGflops = 0.0; // measured with CLBlast's own
};

class GemmTuningStore {
public:
    explicit GemmTuningStore(std::filesystem::path configDir);

    // Nothing (not an error) when the file, the device or the dtype has no entry, or it is broken.
    std::optional<StoredTuning> load(const compute::OpenClDeviceInfo& device,
                                     core::DType dtype) const;
    [[nodiscard]] Expected<void> save(const compute::OpenClDeviceInfo& device, core::DType dtype,
                                      const StoredTuning& tuning);
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

} // namespace goblin::volunteer
