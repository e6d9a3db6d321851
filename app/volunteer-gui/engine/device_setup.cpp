#include "device_setup.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend_chooser.hpp"
#include "device_choice.hpp"
#include "gemm_tuning_store.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/compute/gemm_calibration.hpp"
#include "goblin/compute/opencl_backend.hpp"

namespace goblin::volunteer {
namespace {

std::vector<core::DType> dtypesOf(const compute::OpenClDeviceInfo& device) {
    if (device.fp64)
        return {core::DType::F32, core::DType::F64};
    return {core::DType::F32};
}

// Applies what an earlier --calibrate stored for this device and driver.
void applyStoredTuning(compute::OpenClBackend& device, const std::filesystem::path& configDir,
                       const std::function<void(const std::string&)>& log) {
    const GemmTuningStore store(configDir);
    for (core::DType dtype : dtypesOf(device.device())) {
        auto stored = store.load(device.device(), dtype);
        if (!stored)
            continue;
        if (auto applied = device.setGemmParameters(dtype, stored->parameters); !applied) {
            log("ignoring stored CLBlast parameters: " + applied.error().message);
            continue;
        }
        log("CLBlast " + std::string(core::wireName(dtype)) + " GEMM: calibrated parameters (" +
            std::to_string(static_cast<int>(stored->gflops)) + " GFLOP/s at calibration, " +
            std::to_string(static_cast<int>(stored->defaultGflops)) + " untuned)");
    }
}

} // namespace

std::filesystem::path defaultCacheDir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::filesystem::path(xdg) / "goblin-volunteer";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "goblin-volunteer";
    return std::filesystem::current_path() / ".goblin-volunteer-cache";
}

Expected<DeviceSetup> setUpDevices(const DeviceSetupOptions& options,
                                   const std::function<void(const std::string&)>& log) {
    auto choice = parseDeviceChoice(options.devices);
    if (!choice)
        return tl::unexpected(choice.error());
    const CpuDescription cpu{options.cpuThreads, options.memoryBytes, {}};
    auto cpuBackend =
        std::make_unique<compute::EigenCpuBackend>(compute::CpuBackendOptions{options.cpuThreads});
    DeviceSetup setup;
    std::unique_ptr<compute::OpenClBackend> device;
    if (!choice->gpus.empty()) {
        if (choice->gpus.size() > 1)
            log("--devices: one OpenCL device at a time for now; using gpu" +
                std::to_string(choice->gpus.front()));
        auto cache = compute::prepareOpenClCache(options.cacheDir / "opencl");
        if (!cache)
            log("OpenCL program cache: " + cache.error().message);
        compute::OpenClBackendOptions openclOptions;
        openclOptions.device = choice->gpus.front();
        openclOptions.sliceSeconds = options.sliceSeconds;
        auto opened = compute::OpenClBackend::create(openclOptions);
        if (opened) {
            device = std::move(*opened);
            applyStoredTuning(*device, options.configDir, log);
            log("OpenCL device gpu" + std::to_string(device->device().index) + ": " +
                device->device().name + " (" + device->device().driverVersion + "), about " +
                std::to_string(static_cast<int>(device->estimatedGflops())) +
                " GFLOP/s; the CPU takes what it cannot");
        } else {
            log("OpenCL device gpu" + std::to_string(choice->gpus.front()) + " unavailable (" +
                opened.error().message + "); computing on the CPU");
        }
    }
    setup.devices = describeDevices(cpu, device ? &device->device() : nullptr);
    if (device)
        setup.graphDevice = device->device().index;
    setup.backend = std::make_unique<BackendChooser>(std::move(device), std::move(cpuBackend), log);
    return setup;
}

int calibrateDevices(const DeviceSetupOptions& options, double seconds,
                     const std::function<void(const std::string&)>& log) {
    auto choice = parseDeviceChoice(options.devices);
    auto devices = compute::listOpenClDevices();
    if (!choice || !devices) {
        log("cannot calibrate: " + (!choice ? choice.error() : devices.error()).message);
        return 1;
    }
    std::vector<int> indexes = choice->gpus;
    for (const auto& device : *devices)
        if (choice->gpus.empty())
            indexes.push_back(device.index);
    if (indexes.empty()) {
        log("no OpenCL device to calibrate; the CPU backend needs no calibration");
        return 1;
    }
    (void)compute::prepareOpenClCache(options.cacheDir / "opencl");
    GemmTuningStore store(options.configDir);
    int status = 0;
    for (int index : indexes) {
        compute::OpenClBackendOptions openclOptions;
        openclOptions.device = index;
        openclOptions.assumedGflops = 1.0; // no start-up probe: calibration measures
        auto backend = compute::OpenClBackend::create(openclOptions);
        if (!backend) {
            log("gpu" + std::to_string(index) + ": " + backend.error().message);
            status = 1;
            continue;
        }
        const auto& info = (*backend)->device();
        for (core::DType dtype : dtypesOf(info)) {
            const std::string what =
                "gpu" + std::to_string(index) + " " + std::string(core::wireName(dtype));
            log(what + ": calibrating CLBlast GEMM on " + info.name + " for about " +
                std::to_string(static_cast<int>(seconds)) + " s");
            compute::CalibrationOptions calibration;
            calibration.timeLimitSeconds = seconds;
            calibration.progress = [&](const std::string& line) { log(what + " " + line); };
            auto result = compute::calibrateGemm(**backend, dtype, calibration);
            if (!result) {
                log(what + ": calibration failed: " + result.error().message);
                status = 1;
                continue;
            }
            const StoredTuning tuning{result->best, result->bestGflops, result->defaultGflops};
            if (auto saved = store.save(info, dtype, tuning); !saved) {
                log(what + ": " + saved.error().message);
                status = 1;
                continue;
            }
            char line[200];
            std::snprintf(line, sizeof line,
                          ": %.1f GFLOP/s untuned, %.1f calibrated (x%.2f) after %d candidate(s), "
                          "%d refused; saved",
                          result->defaultGflops, result->bestGflops,
                          result->bestGflops / std::max(result->defaultGflops, 1e-9), result->tried,
                          result->failed);
            log(what + line + " in " + store.path().string());
        }
    }
    return status;
}

} // namespace goblin::volunteer
