// The matmul job kind: a product split into tiles, each leased to one volunteer, verified at the
// node (Freivalds in float64 against a sound bound) and merged into the job's result file before
// its verdict commits; a rejected tile goes to another volunteer. Intake is MatmulIntake, delivery
// matmul_delivery. Core thread; verification runs on the worker pool (inline for tiny tiles).
#pragma once

#include <string>

#include "goblin/net/messages/row_block_messages.hpp"
#include "kinds/matmul/job_book.hpp"
#include "kinds/matmul/matmul_intake.hpp"
#include "node/node_context.hpp"
#include "node/researcher_desk.hpp"
#include "work/job_kind.hpp"
#include "work/scheduler.hpp"
#include "work/verdict_path.hpp"

namespace goblin::labnode {

class MatmulJobs final : public JobKind {
public:
    MatmulJobs(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
               Scheduler& scheduler, VerdictPath& verdicts, MatmulSettings settings);

    std::string_view taskOp() const override { return "matmul"; }
    std::string_view submitType() const override { return "submit_matmul"; }
    int minimumCatalog() const override { return net::kMatmulCatalogVersion; }
    bool ownsJob(std::string_view jobId) const override { return jobId.starts_with("j-"); }

    void recover() override;
    void submit(const ResearcherRequest& request, net::Message message) override;
    void fetch(const ResearcherRequest& request, const std::string& jobId) override;
    void release(const ResearcherRequest& request, const std::string& jobId) override;
    // Always clean: every tile is checked on its own, so a later quarantine changes no tile.
    void audit(const ResearcherRequest& request, const std::string& jobId) override;
    Expected<void> cancel(const std::string& jobId, const std::string& who) override;
    Expected<void> purge(const std::string& jobId) override;
    // Inputs uploaded in row blocks before a submission (StagedUploads), and rows of a done job's
    // product (fetch_rows).
    std::vector<std::string_view> routedTypes() const override {
        return {"upload", "upload_rows", "drop_upload", "fetch_rows"};
    }
    Expected<void> onRouted(const ResearcherRequest& request, net::Message message) override;

    bool hasQueued() const override { return m_book.hasQueued(); }
    std::optional<TaskClaim> claimTaskFor(const Peer& volunteer,
                                          const TaskFilter& mayTake) override;
    TaskFrame taskFrame(const Lease& lease) override;
    void onResult(const Lease& lease, net::Message message) override;
    void onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail) override;
    // The node computes the tile (tile_node_compute.hpp) and merges it through the verdict path.
    void computeOnNode(std::int64_t task) override;

    const JobBook& book() const { return m_book; }
    StagedUploads& uploads() { return m_uploads; }

private:
    void onCreated(const ResearcherRequest& request, LoadedJob loaded, const plan::TilePlan& plan);
    // Rows of a done job's product (one delivered in row blocks, or any other).
    Expected<void> fetchRows(const ResearcherRequest& request, net::FetchRows fetch);
    // The job a fetch or release names, when it belongs to this researcher and is not released.
    Expected<JobRecord> ownedJob(const ResearcherRequest& request, const std::string& jobId);
    // `tile`: the verified tile, pushed on acceptance when its job streams (null: not kept).
    void onVerified(std::uint64_t peer, VerdictRecord verdict, net::TensorPtr tile);
    void applyVerdict(const VerdictRecord& verdict, const net::TensorPtr& tile);
    void finishJob(const std::string& jobId);
    // `streamed`: the peer already has every tile (result_tile); its job_done carries none.
    void deliver(std::uint64_t peer, const JobRecord& job, std::int64_t requestId,
                 bool streamed = false);
    void deleteData(const JobRecord& job);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    Scheduler& m_scheduler;
    VerdictPath& m_verdicts;
    StagedUploads m_uploads; // before the intake, which takes from it
    MatmulIntake m_intake;
    JobBook m_book;
    std::size_t m_maxTensorBytes;
};

} // namespace goblin::labnode
