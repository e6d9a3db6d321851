// Runs the engine's tasks (owned by VolunteerEngine). Its methods and its bookkeeping (tasks open,
// the running task's progress, the counters it adds to) live on the engine's io thread; the work
// runs on its own compute thread, which waits at the ComputeGate, sends the outcome on the task's
// connection and only posts back. A matmul cheaper than the two thread hops runs on the io thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "compute_gate.hpp"
#include "compute_priority.hpp"
#include "engine_status.hpp"
#include "goblin/compute/backend.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "goblin/net/ws_connection.hpp"
#include "graph_task.hpp"
#include "sliced_matmul.hpp"

namespace goblin::volunteer {

class TaskRunner {
public:
    using LogSink = std::function<void(const std::string&)>;

    // `counters` and `log` are the engine's, used on the io thread. `graphDevice`: the OpenCL
    // device for graph tasks (else the CPU reference). `applyCpuThreads`: compute thread, when the
    // plan's thread count changes. The compute thread is named "goblin-compute" and, at
    // ComputePriority::Low, lowered before its first task (the threads it starts inherit that).
    TaskRunner(boost::asio::io_context& io, compute::Backend& backend, ComputeGate& gate,
               EngineCounters& counters, std::optional<int> graphDevice,
               std::function<void(int threads)> applyCpuThreads, ComputePriority priority,
               LogSink log);

    // Tasks that arrive from now on belong to `generation`; those of earlier ones are stale (no
    // longer leased to us): they give up at the gate or at their next slice.
    void setLiveGeneration(std::uint64_t generation) { m_liveGeneration = generation; }
    void runMatmul(std::shared_ptr<net::WsConnection> connection, net::MatmulTask task);
    void runGraph(std::shared_ptr<net::WsConnection> connection, net::GraphTask task);
    // Io thread: told whether any task is held or running after each change (and around a task
    // computed at once on the io thread).
    void setBusyHook(std::function<void(bool busy)> hook) { m_busyHook = std::move(hook); }
    // Waits for the compute thread to run out of work (after the gate's shutdown, at once).
    void join() { m_compute.join(); }

    int tasksOpen() const { return m_tasksOpen; }
    const std::optional<TaskProgress>& running() const { return m_running; }

private:
    // Whether a matmul task is computed at once on the io thread (computeNow) instead of going
    // through the compute thread: a product cheaper than the two thread hops, while the compute
    // thread is idle and the plan runs at full duty with nothing held or paused.
    bool computesNow(const net::MatmulTask& task) const;
    void computeNow(const std::shared_ptr<net::WsConnection>& connection,
                    const net::MatmulTask& task);
    // Sends a matmul task's product (TaskResult) or its error (TaskError); returns the bytes of
    // the product sent, 0 for an error. Either thread (a connection's send is thread-safe).
    std::int64_t sendMatmulOutcome(const std::shared_ptr<net::WsConnection>& connection,
                                   const net::TaskRef& ref, Expected<core::Tensor> product,
                                   double seconds) const;
    void compute(std::shared_ptr<net::WsConnection> connection, std::uint64_t generation,
                 std::int64_t taskId, std::int64_t attempt, std::shared_ptr<const core::Tensor> a,
                 std::shared_ptr<const core::Tensor> b);
    void computeGraph(std::shared_ptr<net::WsConnection> connection, std::uint64_t generation,
                      const net::GraphTask& task);
    void finishTask(std::int64_t computed, std::int64_t failed, double seconds,
                    std::int64_t bytesSent);
    // True once tasks of `generation` are stale: their connection closed and the node re-queued
    // them. Any thread.
    std::function<bool()> staleTest(std::uint64_t generation) const {
        return [this, generation] { return m_liveGeneration.load() != generation; };
    }

    boost::asio::io_context& m_io;
    compute::Backend& m_backend;
    ComputeGate& m_gate;
    EngineCounters& m_counters; // io thread
    std::function<void(int threads)> m_applyCpuThreads;
    LogSink m_log;
    std::function<void(bool busy)> m_busyHook; // io thread
    void tellBusy(bool busy) const {
        if (m_busyHook)
            m_busyHook(busy);
    }
    SliceTuning m_tuning;            // compute thread only
    GraphExecutors m_graphExecutors; // compute thread only
    // The generation whose tasks are still worth computing; the compute thread reads it.
    std::atomic<std::uint64_t> m_liveGeneration{0};
    int m_tasksOpen = 0;                   // io thread
    std::optional<TaskProgress> m_running; // io thread
    // Last, so it is joined before the members its work uses go away.
    boost::asio::thread_pool m_compute{1};
};

} // namespace goblin::volunteer
