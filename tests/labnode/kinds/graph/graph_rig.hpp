// What the tests of the graph deciders share: a real GraphBook holding one job, relu(x·w) over
// x [8, 128] split into two tasks (each chunk's matmul is a witness), the node's context, verdict
// path, scheduler, peers and trust from the role harness (SQLite in memory), a GraphDecisions
// whose hooks record what was asked, and replicas built from the reference executor: honest, with
// one element nudged one ulp (past a canonical replica's bit-for-bit tolerance) or all zeros.
// Wired as the Coordinator wires them: committed verdicts feed trust, a quarantine re-decides.
// The test's thread.
#pragma once

#include <map>

#include "kinds/graph/graph_decisions.hpp"
#include "labnode/node_harness.hpp"

namespace goblin::labnode::testing {

// The volunteers' agreement decides: no probation, no audit floor.
TrustSettings noAudits();
// Every agreement audited, cheaply (a failed cheap audit then recomputes the task in full).
TrustSettings alwaysAudited();

// What the deciders asked of the graph kind, per task id.
struct Recorded {
    std::map<std::int64_t, int> opinionsWanted;
    std::map<std::int64_t, int> decided;
    std::vector<std::string> jobFailures;
    int rechecksDone = 0;
    std::map<std::int64_t, int> outputsReplaced; // decided tasks whose outputs the node replaced
    int quarantinesHandled = 0; // quarantine listeners that ran (the decisions' first)
};

// Same dtypes, shapes and bits.
bool sameBits(const std::vector<core::Tensor>& a, const std::vector<core::Tensor>& b);
// The researcher's outputs among a chunk's (the first; the witness after it is never kept).
std::vector<core::Tensor> researcherOutputs(std::vector<core::Tensor> outputs);

class GraphRig {
public:
    explicit GraphRig(TrustSettings settings, GraphVerification verification = {});
    ~GraphRig() { rig.node.workers.join(); } // nothing posts to a unit that is gone

    // Empty when the job was set up; else why not.
    const std::string& setupError() const { return m_setupError; }
    GraphTask& task(std::size_t chunk) { return *book.task(taskIds.at(chunk)); }
    GraphJob& job() { return *book.job(jobId); }

    // The chunk's outputs (the researcher's, then the witness) by the CPU reference, fresh.
    std::vector<core::Tensor> reference(std::size_t chunk);
    verify::Replica honest(std::size_t chunk, const std::string& volunteer);
    // The researcher's output's first positive element one ulp up; the witness left honest.
    verify::Replica lying(std::size_t chunk, const std::string& volunteer);
    verify::Replica lazy(std::size_t chunk, const std::string& volunteer);

    // The replica arrives as the task source hands it over: its volunteer involved, its attempt
    // the task's next. Returns the attempt.
    std::int64_t add(GraphTask& task, verify::Replica replica,
                     const std::string& address = "10.0.0.1");

    bool waitDecided(std::size_t chunk);
    // Runs the core thread until what was posted before (to core and through the workers) ran.
    bool settle();

    // graph_results of one attempt: "verdict method", empty when none.
    std::string verdictOf(std::int64_t taskId, std::int64_t attempt);
    std::int64_t countResults(const std::string& where);
    // graph_tasks.outputs of an accepted task (empty when not accepted), and those tensors.
    std::string storedText(std::int64_t taskId);
    std::vector<core::Tensor> storedOutputs(std::int64_t taskId);

    RoleRig rig;
    TrustBook trust;
    VerdictPath path;
    Scheduler scheduler;
    GraphBook book;
    Recorded recorded;
    GraphDecisions decisions;
    std::string jobId;
    std::vector<std::int64_t> taskIds;

private:
    DecisionHooks hooks();
    void setUpJob(GraphVerification verification);

    std::string m_setupError;
    std::map<std::int64_t, std::int64_t> m_attempts; // the last given per task
};

} // namespace goblin::labnode::testing
