// Audits of delivered graph jobs. When a volunteer is quarantined, every delivered job (done,
// retained or released) with a task whose outputs rest on its agreement with another volunteer is
// audited: the node recomputes those tasks from the job's kept data; outputs that differ are
// replaced by the node's, the agreeing replicas overturned (their volunteers quarantined in turn),
// and the researcher is told — an audit_report pushed to its connections when the audit ends,
// and on request (`audit`), with the corrected outputs. Audits run one at a time and are durable
// (graph_job_audits): a restarted node finishes them. Core thread; recomputations and merges run
// on the worker pool.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/graph/delivered_recheck.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "kinds/graph/graph_store.hpp"
#include "kinds/graph/job_audit_store.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/trust_book.hpp"

namespace goblin::labnode {

class DeliveredAudits {
public:
    // A job's outputs were corrected; `merged` are its outputs as they are now.
    using OnCorrected =
        std::function<void(const std::string& jobId, const std::vector<core::Tensor>& merged)>;
    // An audit corrected tasks of the job (any state): `why` names the volunteer caught.
    using OnRechecked = std::function<void(const std::string& jobId, const std::string& why)>;

    DeliveredAudits(NodeContext& context, PeerRegistry& peers, TrustBook& trust,
                    GraphIntakeSettings settings, OnCorrected onCorrected);
    void addCorrectionListener(OnRechecked listener) { m_rechecked.push_back(std::move(listener)); }

    // Start-up: audits a node stopped in the middle of run again.
    void recover();
    void onQuarantined(const std::string& volunteerId, const std::string& reason);
    // Answers `audit` for a job of this researcher (the caller checked who owns it).
    void report(std::uint64_t peer, std::int64_t requestId, const GraphJobRow& job);
    bool idle() const { return !m_running && m_queue.empty(); }

private:
    void runNext();
    void run(const JobAuditRow& audit);
    void apply(const JobAuditRow& audit, const JobRecheck& recheck);
    void finish(const JobAuditRow& audit, const std::string& state, std::int64_t tasks,
                std::int64_t corrected);
    // An audit of the job ended: tell its researcher when none is left running.
    void afterAudit(const std::string& jobId, bool corrected);
    // Builds the job's report (merging its outputs on a worker when an audit corrected them) and
    // sends it to `peers`; `onCorrected` gets the merged outputs when asked to.
    void sendReport(const GraphJobRow& job, std::vector<std::uint64_t> peers,
                    std::int64_t requestId, bool announceCorrection);
    net::AuditReport reportOf(const std::string& jobId, std::int64_t requestId);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    TrustBook& m_trust;
    GraphIntakeSettings m_settings;
    OnCorrected m_onCorrected;
    std::vector<OnRechecked> m_rechecked;
    std::deque<std::int64_t> m_queue; // audit ids
    bool m_running = false;
};

} // namespace goblin::labnode
