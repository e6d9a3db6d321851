#include "kinds/matmul/matmul_intake.hpp"

#include <mutex>

#include <boost/asio/post.hpp>

#include "goblin/net/messages/researcher_messages.hpp"
#include "goblin/plan/tile_planner.hpp"
#include "kinds/matmul/matmul_delivery.hpp"
#include "kinds/matmul/matmul_request.hpp"
#include "node/secrets.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

MatmulIntake::MatmulIntake(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk,
                           StagedUploads& uploads, MatmulSettings settings, Created created)
    : m_context(context), m_peers(peers), m_desk(desk), m_uploads(uploads), m_settings(settings),
      m_created(std::move(created)) {}

std::shared_ptr<ColumnProbeCache> MatmulIntake::newProbes() {
    verify::MatmulCheckOptions options;
    options.vectors = m_settings.verificationVectors;
    return std::make_shared<ColumnProbeCache>(m_context.random, options);
}

void MatmulIntake::submit(const ResearcherRequest& request, net::Message message) {
    auto submit = net::parseSubmitMatmul(message);
    if (!submit)
        return m_desk.replyError(request.peer, request.requestId, submit.error());
    Wishes wishes;
    if (submit->tile)
        wishes.tile = std::pair(submit->tile->rows, submit->tile->cols);
    wishes.stream = submit->stream;
    if (!submit->uploads.empty())
        return submitStaged(request, std::move(submit->uploads), wishes);
    const net::TensorPtr& a = submit->a;
    const net::TensorPtr& b = submit->b;
    if (auto ok = checkMatmulShapes(a->dtype(), b->dtype(), a->shape(), b->shape()); !ok)
        return m_desk.replyError(request.peer, request.requestId, ok.error());
    // Finite checks and blob writes are O(size): A and B are taken in on two workers at once, and
    // whichever finishes second hands the job to the core thread.
    struct Intake {
        std::mutex mutex;
        int pending = 2;
        Expected<std::string> digests[2];
    };
    auto intake = std::make_shared<Intake>();
    const double received = m_context.clock();
    for (int index = 0; index < 2; ++index) {
        asio::post(m_context.workers, [this, request, received, intake, index, a, b, wishes] {
            auto digest =
                storeFiniteInput(index == 0 ? "A" : "B", *(index == 0 ? a : b), m_context.blobs);
            {
                std::lock_guard lock(intake->mutex);
                intake->digests[index] = std::move(digest);
                if (--intake->pending > 0)
                    return;
            }
            for (const auto& outcome : intake->digests) {
                if (!outcome) {
                    // The other input may be stored already: it goes too.
                    std::vector<std::string> stored;
                    for (const auto& each : intake->digests)
                        if (each)
                            stored.push_back(*each);
                    asio::post(m_context.core, [this, request, stored, error = outcome.error()] {
                        refuse(request, stored, error);
                    });
                    return;
                }
            }
            m_context.log("intake: inputs checked and stored in " +
                          std::to_string(m_context.clock() - received) + " s");
            asio::post(m_context.core, [=, this] {
                createJob(
                    request,
                    StagedMatrix{*intake->digests[0], a->dtype(), a->shape()[0], a->shape()[1]},
                    StagedMatrix{*intake->digests[1], b->dtype(), b->shape()[0], b->shape()[1]},
                    wishes);
            });
        });
    }
}

void MatmulIntake::submitStaged(const ResearcherRequest& request, std::vector<std::string> uploads,
                                Wishes wishes) {
    m_uploads.take(
        request, uploads, [this, request, wishes](Expected<std::vector<StagedMatrix>> matrices) {
            if (!matrices)
                return m_desk.replyError(request.peer, request.requestId, matrices.error());
            const StagedMatrix& a = matrices->at(0);
            const StagedMatrix& b = matrices->at(1);
            auto shapes = checkMatmulShapes(a.dtype, b.dtype, {a.rows, a.cols}, {b.rows, b.cols});
            createJob(request, a, b, wishes, shapes);
        });
}

void MatmulIntake::createJob(const ResearcherRequest& request, const StagedMatrix& a,
                             const StagedMatrix& b, Wishes wishes, Expected<void> valid) {
    plan::PlanningInput input;
    input.m = a.rows;
    input.k = a.cols;
    input.n = b.cols;
    input.dtype = a.dtype;
    input.volunteers = m_peers.readyVolunteerCount(&input.smallestVolunteerMemory);
    input.requestedTile = wishes.tile;
    input.maxTiles = m_settings.limits.maxTiles;
    input.maxTensorBytes = static_cast<std::int64_t>(m_settings.limits.maxTensorBytes);
    const std::vector<std::string> inputs{a.digest, b.digest};
    if (!valid)
        return refuse(request, inputs, valid.error());
    auto tiles = plan::planTiles(input);
    if (!tiles)
        return refuse(request, inputs, tiles.error());
    JobRecord record{randomId("j-", m_context.random),
                     request.researcherId,
                     input.dtype,
                     input.m,
                     input.k,
                     input.n,
                     tiles->tileRows,
                     tiles->tileCols,
                     a.digest,
                     b.digest,
                     JobState::Running,
                     m_context.clock(),
                     0};
    auto loaded = labnode::createJob(m_context.store, m_context.blobs, std::move(record), *tiles,
                                     newProbes());
    if (!loaded)
        return refuse(request, inputs, loaded.error());
    const auto item = static_cast<std::int64_t>(core::itemSize(input.dtype));
    const bool whole = static_cast<std::size_t>(input.m * input.n * item) <=
                       wholeProductBytes(m_settings.limits.maxTensorBytes);
    if (wishes.stream && whole && tiles->tileRows * tiles->tileCols * item >= kStreamedTileBytes)
        loaded->job.streamTo = request.peer;
    m_created(request, std::move(*loaded), *tiles);
}

void MatmulIntake::refuse(const ResearcherRequest& request, const std::vector<std::string>& digests,
                          const Error& error) {
    for (const std::string& digest : digests)
        if (!m_context.store.blobInUse(digest, {}))
            m_context.blobs.remove(digest);
    m_desk.replyError(request.peer, request.requestId, error);
}

} // namespace goblin::labnode
