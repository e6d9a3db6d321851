// The OpenCL executor of the op catalog: reference::runGraph's contract (same outputs, same error
// codes) on one OpenCL device, with kernels that share the reference's scalar math and reduction
// order (docs/ops.md, "Backend agreement"); nodes it cannot run exactly run on the CPU reference
// and are listed by fellBackOps(). One executor lives on one compute thread.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "goblin/compute/opencl_devices.hpp"
#include "goblin/core/error.hpp"
#include "goblin/core/graph/graph.hpp"
#include "goblin/core/ops/op_code.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/reference/graph_run_hooks.hpp"

namespace goblin::compute {

struct OpenClGraphOptions {
    // Ops to run on the CPU reference even though they have kernels (a kernel known to be wrong on
    // some driver; tests of the fallback path).
    std::vector<core::ops::OpCode> cpuOps;
    // Treat the device as one without fp64: f64 nodes on the CPU, f32 transcendentals from the
    // device's builtins (how such devices run; for tests).
    bool ignoreFp64 = false;
};

class OpenClGraphExecutor {
public:
    // Opens device `deviceIndex` of listOpenClDevices(); programs are built on first use and cached
    // for the executor's lifetime (one build per family and type configuration).
    [[nodiscard]] static Expected<OpenClGraphExecutor>
    create(int deviceIndex, const OpenClGraphOptions& options = {});

    OpenClGraphExecutor(OpenClGraphExecutor&&) noexcept;
    OpenClGraphExecutor& operator=(OpenClGraphExecutor&&) noexcept;
    ~OpenClGraphExecutor();

    // A validated graph (plan from core::graph::validateGraph) on inputs in graph.inputs order;
    // outputs in graph.outputs order. Device buffers of intermediates are freed after their last
    // use.
    [[nodiscard]] Expected<std::vector<core::Tensor>>
    run(const core::graph::Graph& graph, const core::graph::GraphPlan& plan,
        std::span<const core::Tensor> inputs, const reference::GraphRunHooks& hooks = {});

    // The ops that ran on the CPU reference (no kernel, or f64 on a device without fp64) in the
    // runs so far: each once, in op-code order.
    [[nodiscard]] std::vector<core::ops::OpCode> fellBackOps() const;

    [[nodiscard]] const OpenClDeviceInfo& device() const;

    // OpenCL programs built so far (each family and type configuration once per executor).
    [[nodiscard]] std::size_t programBuilds() const;

    // Whether `op` has an OpenCL kernel in this build (independent of the device).
    [[nodiscard]] static bool hasKernel(core::ops::OpCode op);

private:
    struct State;
    explicit OpenClGraphExecutor(std::unique_ptr<State> state);
    std::unique_ptr<State> m_state;
};

} // namespace goblin::compute
