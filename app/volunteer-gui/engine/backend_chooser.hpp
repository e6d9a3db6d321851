// A Backend that picks, per call, the volunteer's OpenCL device when it has one and the product
// fits it, else the CPU. A runtime failure of the device fails that call (the engine reports the
// task as task_error, never a wrong result) and sends every later call to the CPU. A stop asked
// by the caller's SliceHooks is not a device failure.
// matmul() runs on the engine's compute thread; name() is safe from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "goblin/compute/backend.hpp"

namespace goblin::volunteer {

class BackendChooser final : public compute::Backend {
public:
    using LogSink = std::function<void(const std::string&)>; // must be thread-safe

    // `device` may be null (CPU only); `cpu` must not be.
    BackendChooser(std::unique_ptr<compute::Backend> device, std::unique_ptr<compute::Backend> cpu,
                   LogSink log);

    // The backend that computed (or failed) the latest product; before any, the preferred one.
    std::string_view name() const override { return m_current.load()->name(); }
    using compute::Backend::matmul;
    Expected<core::Tensor> matmul(const core::Tensor& a, const core::Tensor& b,
                                  const compute::SliceHooks& hooks) override;
    // That of the backend this product goes to (the device while it works and takes it).
    bool slicesInternally(const core::Tensor& a, const core::Tensor& b) const override;
    bool deviceActive() const { return m_device != nullptr && !m_deviceFailed.load(); }

private:
    std::unique_ptr<compute::Backend> m_device;
    std::unique_ptr<compute::Backend> m_cpu;
    LogSink m_log;
    std::atomic<const compute::Backend*> m_current;
    std::atomic<bool> m_deviceFailed{false};
};

} // namespace goblin::volunteer
