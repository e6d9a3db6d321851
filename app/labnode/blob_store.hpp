// The node's data directory: content-addressed input blobs (raw element bytes, named by SHA-256),
// mapped read-only for tiling and verification, and one result file per job that accepted tiles are
// written into in place. Methods are safe on any thread; each file is written by one thread at a
// time.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
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

private:
    MappedFile() = default;
    const std::byte* m_data = nullptr;
    std::size_t m_size = 0;
};

class BlobStore {
public:
    explicit BlobStore(std::filesystem::path root); // creates the folders; throws on failure

    // Writes the tensor's bytes once under their SHA-256 (hex) and returns it.
    Expected<std::string> put(const core::Tensor& tensor) const;
    Expected<std::shared_ptr<MappedFile>> map(const std::string& digest) const;
    void remove(const std::string& digest) const;
    bool has(const std::string& digest) const;

    // The result file of a job, created at its full size when missing.
    Expected<void> createResult(const std::string& jobId, std::size_t bytes) const;
    // Writes a tile (rows × cols, row-major) at (row0, col0) of a result with `rowLength` columns.
    Expected<void> writeTile(const std::string& jobId, const core::Tensor& tile, std::int64_t row0,
                             std::int64_t col0, std::int64_t rowLength) const;
    Expected<core::Tensor> readResult(const std::string& jobId, core::DType dtype,
                                      const core::Shape& shape) const;
    void removeResult(const std::string& jobId) const;

private:
    std::filesystem::path resultPath(const std::string& jobId) const;
    std::filesystem::path m_root;
};

} // namespace goblin::labnode
