#include "sliced_matmul.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace goblin::volunteer {
namespace {

using Clock = std::chrono::steady_clock;

double sliceSecondsFor(const SliceTuning& tuning, const ComputePlan& plan) {
    if (tuning.sliceSeconds <= 0 || plan.dutyPercent < 100)
        return tuning.sliceSeconds;
    return std::max(tuning.sliceSeconds, kFullDutySliceSeconds);
}

std::int64_t rowsForBudget(const SliceTuning& tuning, const ComputePlan& plan, std::int64_t k,
                           std::int64_t n, std::int64_t m) {
    const double flopsPerRow = 2.0 * static_cast<double>(std::max<std::int64_t>(k, 1)) *
                               static_cast<double>(std::max<std::int64_t>(n, 1));
    const double rows = tuning.flopsPerSecond * sliceSecondsFor(tuning, plan) / flopsPerRow;
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(rows), 1, m);
}

void applyPlanThreads(ComputeGate& gate, SliceTuning& tuning, const SlicedRun& hooks) {
    const int threads = gate.plan().threads;
    if (threads > 0 && threads != tuning.appliedThreads && hooks.applyThreads) {
        hooks.applyThreads(threads);
        tuning.appliedThreads = threads;
    }
}

// The whole tile in one call of a backend that slices it itself; between its slices the gate
// rests, parks and cancels exactly as between our own row slices.
std::optional<Expected<SlicedResult>> oneCall(compute::Backend& backend, ComputeGate& gate,
                                              SliceTuning& tuning, const core::Tensor& a,
                                              const core::Tensor& b, const SlicedRun& run) {
    bool stopped = false;
    bool calledBack = false;
    std::chrono::duration<double> waited{0};
    compute::SliceHooks hooks;
    hooks.betweenSlices = [&](double busySeconds, double fraction) {
        calledBack = true;
        const std::chrono::duration<double> took(busySeconds);
        const auto arrived = Clock::now();
        if (run.progress)
            run.progress(fraction);
        stopped = run.cancelled && run.cancelled();
        if (!stopped && fraction >= 1.0)
            gate.rest(took); // the last slice rests too, as in the row loop
        else if (!stopped)
            stopped = gate.betweenSlices(took, run.cancelled) != GateVerdict::Go;
        if (!stopped)
            applyPlanThreads(gate, tuning, run);
        waited += Clock::now() - arrived;
        return !stopped;
    };
    const auto started = Clock::now();
    auto product = backend.matmul(a, b, hooks);
    if (stopped)
        return std::nullopt;
    if (!product)
        return Expected<SlicedResult>(tl::unexpected(product.error()));
    const std::chrono::duration<double> busy = Clock::now() - started - waited;
    if (!calledBack) // trivial shapes, or a product the device refused and the CPU computed
        gate.rest(busy);
    return Expected<SlicedResult>(SlicedResult{std::move(*product), busy.count()});
}

} // namespace

std::optional<Expected<SlicedResult>> slicedMatmul(compute::Backend& backend, ComputeGate& gate,
                                                   SliceTuning& tuning, const core::Tensor& a,
                                                   const core::Tensor& b, const SlicedRun& hooks) {
    applyPlanThreads(gate, tuning, hooks);
    if (backend.slicesInternally(a, b))
        return oneCall(backend, gate, tuning, a, b, hooks);
    const bool sliceable = a.shape().size() == 2 && b.shape().size() == 2 && a.shape()[0] > 1 &&
                           a.dtype() == b.dtype();
    if (!sliceable) {
        // Malformed or trivial: the backend gives the error (or the answer) in one call.
        const auto started = Clock::now();
        auto product = backend.matmul(a, b);
        if (!product)
            return Expected<SlicedResult>(tl::unexpected(product.error()));
        const std::chrono::duration<double> took = Clock::now() - started;
        gate.rest(took);
        return Expected<SlicedResult>(SlicedResult{std::move(*product), took.count()});
    }
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    auto c = core::Tensor::allocate(a.dtype(), {m, n});
    if (!c)
        return Expected<SlicedResult>(tl::unexpected(c.error()));
    const std::size_t rowBytes = static_cast<std::size_t>(n) * core::itemSize(a.dtype());
    const core::MatrixView whole = core::viewOf(a);
    double busy = 0;
    for (std::int64_t row0 = 0; row0 < m;) {
        const std::int64_t rows = std::min(rowsForBudget(tuning, gate.plan(), k, n, m), m - row0);
        const auto started = Clock::now();
        auto slice = core::copyToTensor(core::subView(whole, row0, rows, 0, k));
        if (!slice)
            return Expected<SlicedResult>(tl::unexpected(slice.error()));
        auto part = backend.matmul(*slice, b);
        if (!part)
            return Expected<SlicedResult>(tl::unexpected(part.error()));
        std::memcpy(c->bytes().data() + static_cast<std::size_t>(row0) * rowBytes,
                    part->bytes().data(), part->byteSize());
        const std::chrono::duration<double> took = Clock::now() - started;
        busy += took.count();
        const double flops =
            2.0 * static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(n);
        if (took.count() > 1e-4) // smooth the estimate; tiny slices time too noisily to trust
            tuning.flopsPerSecond = 0.5 * tuning.flopsPerSecond + 0.5 * flops / took.count();
        row0 += rows;
        if (hooks.progress)
            hooks.progress(static_cast<double>(row0) / static_cast<double>(m));
        if (hooks.cancelled && hooks.cancelled())
            return std::nullopt;
        if (row0 == m) {
            gate.rest(took); // the last slice rests too, or small tiles would overshoot the duty %
            break;
        }
        if (gate.betweenSlices(took, hooks.cancelled) != GateVerdict::Go)
            return std::nullopt;
        applyPlanThreads(gate, tuning, hooks);
    }
    return Expected<SlicedResult>(SlicedResult{std::move(*c), busy});
}

} // namespace goblin::volunteer
