// Intake of submit_matmul: shape and dtype rules, then A and B checked for NaN/Inf and stored as
// blobs on two workers at once, then (back on core) the tiles are planned for the volunteers
// connected now and the job and its tasks are written in one transaction. Errors are answered to
// the researcher; a created job is handed to `created`. A submit naming two staged uploads
// ("inputs") takes them instead: their blocks were checked as they came, their files
// become the blobs. Core thread, with work on the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "goblin/net/limits.hpp"
#include "kinds/matmul/job_loader.hpp"
#include "kinds/matmul/matmul_request.hpp"
#include "kinds/matmul/staged_uploads.hpp"
#include "node/node_context.hpp"
#include "node/researcher_desk.hpp"
#include "work/job_kind.hpp"

namespace goblin::labnode {

// Smaller tiles are not streamed: a message per tile of a few KiB costs the researcher more than
// receiving the product at the end (tiny tiles finish thousands per second).
inline constexpr std::int64_t kStreamedTileBytes = std::int64_t{1} << 20;

struct MatmulSettings {
    net::Limits limits;
    int verificationVectors = 2;
};

class MatmulIntake {
public:
    using Created = std::function<void(const ResearcherRequest&, LoadedJob, const plan::TilePlan&)>;

    MatmulIntake(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                 StagedUploads& uploads, MatmulSettings settings, Created created);

    void submit(const ResearcherRequest& request, net::Message message);
    // A fresh probe cache for a job's verification (new random vectors from the node's CSPRNG).
    std::shared_ptr<ColumnProbeCache> newProbes();

private:
    // What a submit_matmul asks for besides its inputs.
    struct Wishes {
        TileRequest tile;
        bool stream = false;
    };
    void submitStaged(const ResearcherRequest& request, std::vector<std::string> uploads,
                      Wishes wishes);
    // `valid`: the shape rules' verdict (staged inputs are checked once taken). A refused job
    // deletes its inputs' blobs unless another job uses them. A stream is granted when the product
    // travels whole and its tiles are at least kStreamedTileBytes.
    void createJob(const ResearcherRequest& request, const StagedMatrix& a, const StagedMatrix& b,
                   Wishes wishes, Expected<void> valid = {});
    // A refused submission's inputs: their blobs deleted unless a job uses them (content-addressed:
    // another job may share one), then the error answered.
    void refuse(const ResearcherRequest& request, const std::vector<std::string>& digests,
                const Error& error);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    StagedUploads& m_uploads;
    MatmulSettings m_settings;
    Created m_created;
};

} // namespace goblin::labnode
