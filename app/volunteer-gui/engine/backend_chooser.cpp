#include "backend_chooser.hpp"

#include <cassert>

namespace goblin::volunteer {

BackendChooser::BackendChooser(std::unique_ptr<compute::Backend> device,
                               std::unique_ptr<compute::Backend> cpu, LogSink log)
    : m_device(std::move(device)), m_cpu(std::move(cpu)), m_log(std::move(log)),
      m_current(m_device ? m_device.get() : m_cpu.get()) {
    assert(m_cpu && "BackendChooser needs a CPU backend");
}

bool BackendChooser::slicesInternally(const core::Tensor& a, const core::Tensor& b) const {
    return deviceActive() && m_device->slicesInternally(a, b) ? true
                                                              : m_cpu->slicesInternally(a, b);
}

Expected<core::Tensor> BackendChooser::matmul(const core::Tensor& a, const core::Tensor& b,
                                              const compute::SliceHooks& hooks) {
    if (deviceActive()) {
        m_current = m_device.get();
        bool stoppedByCaller = false;
        compute::SliceHooks watched;
        if (hooks.betweenSlices)
            watched.betweenSlices = [&](double busySeconds, double fraction) {
                stoppedByCaller = stoppedByCaller || !hooks.betweenSlices(busySeconds, fraction);
                return !stoppedByCaller;
            };
        auto product = m_device->matmul(a, b, watched);
        if (product || stoppedByCaller)
            return product;
        switch (product.error().code) {
        case ErrorCode::UnsupportedDtype:
        case ErrorCode::LimitExceeded:
            // Refused before running (no fp64, too large for the device): the CPU takes it.
            break;
        case ErrorCode::ShapeMismatch:
        case ErrorCode::InvalidInput:
            return product; // the task itself is bad; the CPU would refuse it too
        default:
            // A driver or device failure mid-task: fail this one, use the CPU from now on.
            m_deviceFailed = true;
            m_current = m_cpu.get();
            if (m_log)
                m_log("the OpenCL device failed (" + product.error().describe() +
                      "); this task is reported as failed and later tasks run on the CPU");
            return product;
        }
    }
    m_current = m_cpu.get();
    return m_cpu->matmul(a, b, hooks);
}

} // namespace goblin::volunteer
