#include "task_runner.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

namespace goblin::volunteer {

namespace asio = boost::asio;
namespace json = boost::json;

TaskRunner::TaskRunner(asio::io_context& io, compute::Backend& backend, ComputeGate& gate,
                       EngineCounters& counters, std::optional<int> graphDevice,
                       std::function<void(int threads)> applyCpuThreads, ComputePriority priority,
                       LogSink log)
    : m_io(io), m_backend(backend), m_gate(gate), m_counters(counters),
      m_applyCpuThreads(std::move(applyCpuThreads)), m_log(std::move(log)),
      m_graphExecutors(graphDevice, [this](const std::string& line) {
          asio::post(m_io, [this, line] { m_log(line); });
      }) {
    asio::post(m_compute, [this, priority] {
        nameThisThread("goblin-compute");
        if (priority != ComputePriority::Low)
            return;
        if (auto lowered = lowerThisThread(); !lowered)
            asio::post(m_io, [this, why = lowered.error().message] {
                m_log("compute priority left as started: " + why);
            });
    });
}

void TaskRunner::runMatmul(std::shared_ptr<net::WsConnection> connection, net::MatmulTask task) {
    if (computesNow(task))
        return computeNow(connection, task);
    ++m_tasksOpen;
    tellBusy(true);
    asio::post(m_compute, [this, connection = std::move(connection),
                           generation = m_liveGeneration.load(), task = std::move(task)] {
        compute(connection, generation, task.ref.task, task.ref.attempt, task.a, task.b);
    });
}

void TaskRunner::runGraph(std::shared_ptr<net::WsConnection> connection, net::GraphTask task) {
    ++m_tasksOpen;
    tellBusy(true);
    asio::post(m_compute,
               [this, connection = std::move(connection), generation = m_liveGeneration.load(),
                task = std::move(task)] { computeGraph(connection, generation, task); });
}

bool TaskRunner::computesNow(const net::MatmulTask& task) const {
    // About a microsecond of arithmetic: less than waking the compute thread and back.
    constexpr std::int64_t kMultiplyAdds = 32 * 32 * 32;
    const core::Shape& a = task.a->shape();
    const core::Shape& b = task.b->shape();
    if (a.size() != 2 || b.size() != 2 || a[0] * a[1] * b[1] > kMultiplyAdds)
        return false;
    // While the compute thread holds a task it owns the backend (and a paused or throttled plan
    // must be obeyed at the gate, in order).
    if (m_tasksOpen != 0 || m_backend.slicesInternally(*task.a, *task.b))
        return false;
    const ComputePlan plan = m_gate.plan();
    return plan.run && !plan.holdNewTasks && plan.dutyPercent >= 100;
}

// Io thread, compute thread idle (computesNow).
void TaskRunner::computeNow(const std::shared_ptr<net::WsConnection>& connection,
                            const net::MatmulTask& task) {
    tellBusy(true);
    const auto started = std::chrono::steady_clock::now();
    auto product = m_backend.matmul(*task.a, *task.b);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - started;
    const bool computed = product.has_value();
    const auto bytes = sendMatmulOutcome(connection, task.ref, std::move(product), seconds.count());
    tellBusy(false);
    if (!computed) {
        ++m_counters.failed;
        return;
    }
    ++m_counters.computed;
    m_counters.computeSeconds += seconds.count();
    m_counters.bytesSent += bytes;
}

std::int64_t TaskRunner::sendMatmulOutcome(const std::shared_ptr<net::WsConnection>& connection,
                                           const net::TaskRef& ref, Expected<core::Tensor> product,
                                           double seconds) const {
    if (!product) {
        connection->send(net::toMessage(net::TaskError{net::TaskOp::Matmul, ref, product.error()}));
        return 0;
    }
    const auto bytes = static_cast<std::int64_t>(product->byteSize());
    connection->send(net::toMessage(
        net::TaskResult{net::TaskOp::Matmul,
                        ref,
                        std::string(m_backend.name()),
                        seconds,
                        {std::make_shared<const core::Tensor>(std::move(*product))}}));
    return bytes;
}

// Compute thread: a task ended (computed, failed, or dropped with all zeros).
void TaskRunner::finishTask(std::int64_t computed, std::int64_t failed, double seconds,
                            std::int64_t bytesSent) {
    asio::post(m_io, [=, this] {
        --m_tasksOpen;
        m_running.reset();
        tellBusy(m_tasksOpen > 0);
        m_counters.computed += computed;
        m_counters.failed += failed;
        m_counters.computeSeconds += seconds;
        m_counters.bytesSent += bytesSent;
    });
}

// Compute thread. A graph task runs whole once the gate lets it start (graph tasks are small:
// the node splits big ones along their batch).
void TaskRunner::computeGraph(std::shared_ptr<net::WsConnection> connection,
                              std::uint64_t generation, const net::GraphTask& task) {
    const std::int64_t taskId = task.ref.task, attempt = task.ref.attempt;
    auto stale = staleTest(generation);
    if (m_gate.enterTask(stale) != GateVerdict::Go)
        return finishTask(0, 0, 0, 0);
    asio::post(m_io, [this, taskId] { m_running = TaskProgress{taskId, 0}; });
    // Between nodes the task obeys the gate like a matmul between slices: it rests to keep the
    // duty cycle, parks while paused (a pause holds within about one node), and gives up when
    // stale.
    bool stopped = false;
    auto sliceStart = std::chrono::steady_clock::now();
    reference::GraphRunHooks hooks;
    hooks.beforeNode = [&](std::size_t step, std::size_t steps) {
        const auto now = std::chrono::steady_clock::now();
        if (stopped)
            return false;
        if (step > 0 && now - sliceStart < std::chrono::milliseconds(10))
            return true;
        if (m_gate.betweenSlices(now - sliceStart, stale) != GateVerdict::Go) {
            stopped = true;
            return false;
        }
        const double fraction = static_cast<double>(step) / static_cast<double>(steps);
        asio::post(m_io, [this, taskId, fraction] { m_running = TaskProgress{taskId, fraction}; });
        sliceStart = std::chrono::steady_clock::now();
        return true;
    };
    auto result = m_graphExecutors.run(json::value(task.graph), task.inputs,
                                       core::graph::GraphLimits{}, hooks, task.gemmNodes);
    if (stopped) // shut down or stale mid-task: the node re-queues it
        return finishTask(0, 0, 0, 0);
    if (!result) {
        connection->send(
            net::toMessage(net::TaskError{net::TaskOp::Graph, {taskId, attempt}, result.error()}));
        return finishTask(0, 1, 0, 0);
    }
    // The witnesses another replica carries stay here (omit_witnesses: the graph's last ones).
    const auto kept =
        result->outputs.size() -
        std::min(result->outputs.size(), static_cast<std::size_t>(task.omitWitnesses));
    result->outputs.resize(kept);
    std::vector<net::TensorPtr> outputs;
    std::int64_t bytes = 0;
    for (core::Tensor& output : result->outputs) {
        bytes += static_cast<std::int64_t>(output.byteSize());
        outputs.push_back(std::make_shared<const core::Tensor>(std::move(output)));
    }
    connection->send(net::toMessage(net::TaskResult{net::TaskOp::Graph,
                                                    {taskId, attempt},
                                                    result->backend,
                                                    result->seconds,
                                                    std::move(outputs)}));
    finishTask(1, 0, result->seconds, bytes);
}

// Compute thread. Waits at the gate before the task and between its slices; posts every state
// change to the io thread.
void TaskRunner::compute(std::shared_ptr<net::WsConnection> connection, std::uint64_t generation,
                         std::int64_t taskId, std::int64_t attempt,
                         std::shared_ptr<const core::Tensor> a,
                         std::shared_ptr<const core::Tensor> b) {
    // A task of a closed connection is no longer leased to us: the node has re-queued it.
    auto stale = staleTest(generation);
    if (m_gate.enterTask(stale) != GateVerdict::Go)
        return finishTask(0, 0, 0, 0);
    asio::post(m_io, [this, taskId] { m_running = TaskProgress{taskId, 0}; });
    SlicedRun hooks;
    hooks.applyThreads = m_applyCpuThreads;
    hooks.progress = [this, taskId](double fraction) {
        asio::post(m_io, [this, taskId, fraction] { m_running = TaskProgress{taskId, fraction}; });
    };
    hooks.cancelled = stale;
    auto outcome = slicedMatmul(m_backend, m_gate, m_tuning, *a, *b, hooks);
    if (!outcome) // shut down or stale mid-task: the node re-queues it
        return finishTask(0, 0, 0, 0);
    if (!*outcome) {
        sendMatmulOutcome(connection, {taskId, attempt}, tl::unexpected(outcome->error()), 0);
        return finishTask(0, 1, 0, 0);
    }
    const double busySeconds = (*outcome)->busySeconds;
    const auto bytes = sendMatmulOutcome(connection, {taskId, attempt},
                                         std::move((*outcome)->product), busySeconds);
    finishTask(1, 0, busySeconds, bytes);
}

} // namespace goblin::volunteer
