// The node's data directory: content-addressed input blobs (raw element bytes, named by SHA-256),
// mapped read-only for tiling and verification, and one result file per job that accepted tiles are
// written into in place. Methods are safe on any thread; each file is written by one thread at a
// time.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::labnode {

// A read-only memory mapping of a whole file; unmapped when the last owner lets go.
class MappedFile {
public:
    static Expected<std::shared_ptr<MappedFile>> open(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    std::span<const std::byte> bytes() const { return {m_data, m_size}; }
    // Drops the pages a view into this file spans from the process's resident memory (the page
    // cache keeps them; the next read maps them again), so the rows and columns a large tile read
    // from a blob of many GiB do not stay counted in the node. Spans under 4 MiB are left alone.
    void release(const core::MatrixView& view) const;
    // A copy of a view into this file, read in row chunks whose pages are released as each is
    // copied: reading a few columns of every row maps whole folios around each one (fault-around),
    // so copying a large file's column block at once would count most of the file in the node.
    Expected<core::Tensor> copyOut(const core::MatrixView& view) const;

private:
    MappedFile() = default;
    const std::byte* m_data = nullptr;
    std::size_t m_size = 0;
};

class BlobStore {
public:
    explicit BlobStore(std::filesystem::path root); // creates the folders; throws on failure
    const std::filesystem::path& root() const { return m_root; }

    // Writes the tensor's bytes once under their SHA-256 (hex) and returns it.
    Expected<std::string> put(const core::Tensor& tensor) const;
    Expected<std::shared_ptr<MappedFile>> map(const std::string& digest) const;
    void remove(const std::string& digest) const;
    bool has(const std::string& digest) const;

    // The result file of a job, created at its full size when missing; one of at most
    // kMappedResultBytes gets its disk blocks at once (a full disk fails here) and its tiles are
    // then written through a shared mapping (a tiny tile was a pwrite per row).
    Expected<void> createResult(const std::string& jobId, std::size_t bytes) const;
    // Writes a tile (rows × cols, row-major) at (row0, col0) of a result with `rowLength` columns.
    Expected<void> writeTile(const std::string& jobId, const core::Tensor& tile, std::int64_t row0,
                             std::int64_t col0, std::int64_t rowLength) const;
    Expected<core::Tensor> readResult(const std::string& jobId, core::DType dtype,
                                      const core::Shape& shape) const;
    // Rows row0 … row0+rows−1 of a result with `cols` columns.
    Expected<core::Tensor> readResultRows(const std::string& jobId, core::DType dtype,
                                          std::int64_t row0, std::int64_t rows,
                                          std::int64_t cols) const;
    void removeResult(const std::string& jobId) const;

    // A matrix staged in row blocks (matmul/staged_uploads): a file of its full size, written at
    // offsets, then adopted as the blob named `digest` (its bytes' SHA-256) or removed. Left-over
    // uploads are deleted when the store opens.
    Expected<void> createUpload(const std::string& uploadId, std::size_t bytes) const;
    Expected<void> writeUpload(const std::string& uploadId, std::span<const std::byte> bytes,
                               std::size_t offset) const;
    Expected<void> adoptUpload(const std::string& uploadId, const std::string& digest) const;
    void removeUpload(const std::string& uploadId) const;

private:
    struct OpenFile; // a descriptor, closed with its last owner
    std::filesystem::path resultPath(const std::string& jobId) const;
    std::filesystem::path uploadPath(const std::string& uploadId) const;
    // The result file open for writing: kept open across tiles (a tiny tile is otherwise an open
    // and a close around its row writes), at most kMaxOpenResults at a time.
    Expected<std::shared_ptr<const OpenFile>> openResult(const std::string& jobId) const;
    static constexpr std::size_t kMaxOpenResults = 32;
    static constexpr std::size_t kMappedResultBytes = std::size_t{64} << 20;
    std::filesystem::path m_root;
    mutable std::mutex m_openResultsMutex;
    mutable std::map<std::string, std::shared_ptr<const OpenFile>> m_openResults;
};

} // namespace goblin::labnode
