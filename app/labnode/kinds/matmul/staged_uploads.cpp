#include "kinds/matmul/staged_uploads.hpp"

#include <boost/asio/post.hpp>

#include "goblin/verify/matmul_check.hpp"
#include "http/health_probe.hpp"
#include "node/secrets.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

namespace {

Error invalid(const std::string& what) {
    return Error{ErrorCode::InvalidInput, what};
}

std::uint64_t bytesOf(core::DType dtype, std::int64_t rows, std::int64_t cols) {
    return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) *
           core::itemSize(dtype);
}

} // namespace

StagedUploads::StagedUploads(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk)
    : m_context(context), m_peers(peers), m_desk(desk) {}

StagedUploads::Staged* StagedUploads::owned(const ResearcherRequest& request,
                                            const std::string& id) {
    auto it = m_uploads.find(id);
    if (it == m_uploads.end() || it->second.researcher != request.researcherId ||
        it->second.peer != request.peer)
        return nullptr;
    return &it->second;
}

void StagedUploads::remove(const std::string& id) {
    m_context.blobs.removeUpload(id);
    m_uploads.erase(id);
}

void StagedUploads::begin(const ResearcherRequest& request, const net::Upload& upload) {
    std::size_t open = 0;
    for (const auto& [id, staged] : m_uploads)
        open += staged.peer == request.peer ? 1 : 0;
    if (open >= kMaxPerConnection)
        return m_desk.replyError(
            request.peer, request.requestId,
            Error{ErrorCode::LimitExceeded,
                  "a connection stages at most " + std::to_string(kMaxPerConnection) + " uploads"});
    if (upload.rows > (std::int64_t{1} << 40) / upload.cols)
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::LimitExceeded, "an upload holds at most 2^40 "
                                                                 "elements"});
    const std::uint64_t bytes = bytesOf(upload.dtype, upload.rows, upload.cols);
    const auto free = statvfsFreeBytes(m_context.blobs.root());
    if (free && *free < bytes + kFreeSpaceMargin)
        return m_desk.replyError(
            request.peer, request.requestId,
            Error{ErrorCode::LimitExceeded, "the node's disk has " + std::to_string(*free >> 20) +
                                                " MiB free; this upload needs " +
                                                std::to_string(bytes >> 20) + " MiB"});
    Staged staged{randomId("u-", m_context.random),
                  request.researcherId,
                  request.peer,
                  upload.dtype,
                  upload.rows,
                  upload.cols,
                  0,
                  false,
                  std::make_shared<net::Sha256Stream>()};
    if (auto ok = m_context.blobs.createUpload(staged.id, bytes); !ok) {
        m_context.log.error("upload refused: " + ok.error().message);
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::Internal, "the node cannot stage the upload "
                                                            "(its disk?)"});
    }
    const std::string id = staged.id;
    m_uploads.emplace(id, std::move(staged));
    m_peers.send(request.peer, net::uploadReadyMessage(net::UploadReply{request.requestId, id}));
}

void StagedUploads::receiveRows(const ResearcherRequest& request, net::UploadRows rows) {
    Staged* staged = owned(request, rows.upload);
    if (!staged)
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::NotFound, "no upload " + rows.upload});
    const core::Tensor& block = *rows.rows;
    std::optional<Error> refused;
    if (staged->writing)
        refused = invalid("upload " + staged->id + " is still writing its last block");
    else if (rows.row0 != staged->received)
        refused =
            invalid("upload " + staged->id + " expects row " + std::to_string(staged->received) +
                    ", not row " + std::to_string(rows.row0));
    else if (block.dtype() != staged->dtype || block.shape().size() != 2 ||
             block.shape()[1] != staged->cols || block.shape()[0] < 1 ||
             block.shape()[0] > staged->rows - staged->received)
        refused =
            Error{ErrorCode::ShapeMismatch,
                  "upload " + staged->id + " takes " + std::string(core::wireName(staged->dtype)) +
                      " rows of " + std::to_string(staged->cols) + " columns, at most " +
                      std::to_string(staged->rows - staged->received) + " more"};
    if (refused)
        return m_desk.replyError(request.peer, request.requestId, *refused);
    staged->writing = true;
    const std::size_t offset = bytesOf(staged->dtype, rows.row0, staged->cols);
    asio::post(m_context.workers, [this, request, id = staged->id, row0 = rows.row0, offset,
                                   digest = staged->digest, tensor = rows.rows] {
        Expected<void> written;
        if (auto bad = verify::findNonFinite(core::viewOf(*tensor)))
            written = makeError(ErrorCode::InvalidInput,
                                "row " + std::to_string(row0 + bad->first) + ", column " +
                                    std::to_string(bad->second) +
                                    " holds NaN or Inf; verification needs finite inputs");
        else if (written = m_context.blobs.writeUpload(id, tensor->bytes(), offset); written)
            digest->update(tensor->bytes());
        asio::post(m_context.core, [this, request, id, rows = tensor->shape()[0],
                                    written = std::move(written)] {
            auto it = m_uploads.find(id);
            if (it == m_uploads.end())
                return; // dropped, or its connection closed meanwhile
            Staged& upload = it->second;
            upload.writing = false;
            if (!written) {
                m_context.log.warn("upload " + id + " dropped: " + written.error().message);
                remove(id);
                return m_desk.replyError(
                    request.peer, request.requestId,
                    Error{written.error().code,
                          written.error().message + "; upload " + id + " was dropped"});
            }
            upload.received += rows;
            m_peers.send(request.peer,
                         net::toMessage(net::RowsStored{request.requestId, id, upload.received}));
        });
    });
}

void StagedUploads::drop(const ResearcherRequest& request, const net::DropUpload& drop) {
    if (!owned(request, drop.upload))
        return m_desk.replyError(request.peer, request.requestId,
                                 Error{ErrorCode::NotFound, "no upload " + drop.upload});
    remove(drop.upload);
    m_peers.send(request.peer,
                 net::uploadDroppedMessage(net::UploadReply{request.requestId, drop.upload}));
}

void StagedUploads::take(const ResearcherRequest& request, const std::vector<std::string>& ids,
                         std::function<void(Expected<std::vector<StagedMatrix>>)> then) {
    std::vector<std::pair<std::string, std::shared_ptr<net::Sha256Stream>>> digests;
    std::vector<StagedMatrix> matrices;
    for (const std::string& id : ids) {
        Staged* staged = owned(request, id);
        if (!staged)
            return then(makeError(ErrorCode::NotFound, "no upload " + id));
        if (staged->writing || staged->received != staged->rows)
            return then(
                tl::unexpected(invalid("upload " + id + " has " + std::to_string(staged->received) +
                                       " of its " + std::to_string(staged->rows) + " rows")));
        for (const auto& [taken, unused] : digests)
            if (taken == id)
                return then(tl::unexpected(invalid("upload " + id + " is named twice")));
        digests.emplace_back(id, staged->digest);
        matrices.push_back(StagedMatrix{{}, staged->dtype, staged->rows, staged->cols});
    }
    for (const std::string& id : ids)
        m_uploads.erase(id); // the files stay until adopted
    asio::post(m_context.workers, [this, digests = std::move(digests),
                                   matrices = std::move(matrices),
                                   then = std::move(then)]() mutable {
        Expected<std::vector<StagedMatrix>> outcome;
        for (std::size_t i = 0; i < digests.size(); ++i) {
            matrices[i].digest = digests[i].second->finishHex();
            if (auto ok = m_context.blobs.adoptUpload(digests[i].first, matrices[i].digest);
                !ok && outcome)
                outcome = tl::unexpected(ok.error());
        }
        if (outcome)
            outcome = std::move(matrices);
        else
            for (const auto& [id, unused] : digests)
                m_context.blobs.removeUpload(id);
        asio::post(m_context.core,
                   [then = std::move(then), outcome = std::move(outcome)] { then(outcome); });
    });
}

void StagedUploads::onPeerClosed(std::uint64_t peer) {
    std::vector<std::string> gone;
    for (const auto& [id, staged] : m_uploads)
        if (staged.peer == peer)
            gone.push_back(id);
    for (const std::string& id : gone)
        remove(id);
    if (!gone.empty())
        m_context.log("deleted " + std::to_string(gone.size()) +
                      " upload(s) of a researcher connection that closed");
}

} // namespace goblin::labnode
