// Matrices a researcher uploads in row blocks (docs/protocol.md, "Matrices in row blocks"): each
// is a file of its full size in the data directory, written block by block in row order on a
// worker (every block checked finite, its bytes fed to a running SHA-256), never held in memory;
// submit_matmul names two complete ones, which become the job's input blobs without a second
// pass. An upload lives on its connection: closing it, or drop_upload, deletes it. Core thread;
// block writes on workers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "goblin/net/content_digest.hpp"
#include "goblin/net/messages/upload_messages.hpp"
#include "node/node_context.hpp"
#include "node/peer_registry.hpp"
#include "node/researcher_desk.hpp"

namespace goblin::labnode {

// A complete upload handed to a job: its blob and what it holds.
struct StagedMatrix {
    std::string digest;
    core::DType dtype = core::DType::F32;
    std::int64_t rows = 0, cols = 0;
};

class StagedUploads {
public:
    static constexpr std::size_t kMaxPerConnection = 4;
    // Free space the node keeps beyond an upload (its /healthz floor).
    static constexpr std::uint64_t kFreeSpaceMargin = std::uint64_t{64} << 20;

    StagedUploads(NodeContext& context, PeerRegistry& peers, ResearcherDesk& desk);

    // Each answers the researcher (upload_ready, rows_stored, upload_dropped or an error).
    void begin(const ResearcherRequest& request, const net::Upload& upload);
    void receiveRows(const ResearcherRequest& request, net::UploadRows rows);
    void drop(const ResearcherRequest& request, const net::DropUpload& drop);
    // The researcher's complete uploads `ids`, in order, taken off the book: their files become
    // blobs (on a worker). `then` runs on core with the matrices, or the error (nothing taken).
    void take(const ResearcherRequest& request, const std::vector<std::string>& ids,
              std::function<void(Expected<std::vector<StagedMatrix>>)> then);
    void onPeerClosed(std::uint64_t peer);

private:
    struct Staged {
        std::string id;
        std::int64_t researcher = 0;
        std::uint64_t peer = 0;
        core::DType dtype = core::DType::F32;
        std::int64_t rows = 0, cols = 0;
        std::int64_t received = 0;
        bool writing = false; // a block is on a worker
        std::shared_ptr<net::Sha256Stream> digest;
    };

    Staged* owned(const ResearcherRequest& request, const std::string& id);
    void remove(const std::string& id);

    NodeContext& m_context;
    PeerRegistry& m_peers;
    ResearcherDesk& m_desk;
    std::map<std::string, Staged> m_uploads;
};

} // namespace goblin::labnode
