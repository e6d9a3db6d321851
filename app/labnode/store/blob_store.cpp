#include "store/blob_store.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "goblin/net/content_digest.hpp"

namespace goblin::labnode {

namespace fs = std::filesystem;

namespace {

tl::unexpected<Error> ioError(const std::string& what) {
    return makeError(ErrorCode::Internal, what + ": " + std::strerror(errno));
}

// Closes a file descriptor when it goes out of scope.
struct FileDescriptor {
    int fd = -1;
    FileDescriptor() = default;
    explicit FileDescriptor(int descriptor) : fd(descriptor) {}
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor() {
        if (fd >= 0)
            ::close(fd);
    }
};

bool writeAll(int fd, const std::byte* data, std::size_t size, off_t offset) {
    while (size > 0) {
        const ssize_t written = ::pwrite(fd, data, size, offset);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        data += written;
        size -= static_cast<std::size_t>(written);
        offset += written;
    }
    return true;
}

} // namespace

Expected<std::shared_ptr<MappedFile>> MappedFile::open(const fs::path& path) {
    FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0)
        return ioError("cannot open " + path.string());
    struct stat info {};
    if (::fstat(file.fd, &info) != 0)
        return ioError("cannot stat " + path.string());
    std::shared_ptr<MappedFile> mapped(new MappedFile());
    mapped->m_size = static_cast<std::size_t>(info.st_size);
    if (mapped->m_size == 0)
        return mapped;
    void* data = ::mmap(nullptr, mapped->m_size, PROT_READ, MAP_SHARED, file.fd, 0);
    if (data == MAP_FAILED)
        return ioError("cannot map " + path.string());
    mapped->m_data = static_cast<const std::byte*>(data);
    return mapped;
}

void MappedFile::release(const core::MatrixView& view) const {
    constexpr std::size_t kReleaseBytes = std::size_t{4} << 20;
    if (!m_data || view.rows <= 0 || view.cols <= 0)
        return;
    const auto item = static_cast<std::ptrdiff_t>(core::itemSize(view.dtype));
    const std::byte* begin = view.data;
    const std::byte* end = view.data + ((view.rows - 1) * view.rowStride + view.cols) * item;
    if (begin < m_data || end > m_data + m_size ||
        static_cast<std::size_t>(end - begin) < kReleaseBytes)
        return;
    // Whole pages: the mapping starts on a page and covers the last one.
    static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto first = reinterpret_cast<std::uintptr_t>(begin) / page * page;
    const auto last = (reinterpret_cast<std::uintptr_t>(end) + page - 1) / page * page;
    (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

Expected<core::Tensor> MappedFile::copyOut(const core::MatrixView& view) const {
    constexpr std::int64_t kChunkRows = 512;
    auto tensor = core::Tensor::allocate(view.dtype, {view.rows, view.cols});
    if (!tensor)
        return tensor;
    const auto rowBytes = static_cast<std::size_t>(view.cols) * core::itemSize(view.dtype);
    for (std::int64_t row0 = 0; row0 < view.rows; row0 += kChunkRows) {
        const core::MatrixView chunk =
            core::subView(view, row0, std::min(kChunkRows, view.rows - row0), 0, view.cols);
        core::copyRows(chunk, tensor->bytes().data() + static_cast<std::size_t>(row0) * rowBytes);
        release(chunk);
    }
    return tensor;
}

MappedFile::~MappedFile() {
    if (m_data)
        ::munmap(const_cast<std::byte*>(m_data), m_size);
}

BlobStore::BlobStore(fs::path root) : m_root(std::move(root)) {
    std::error_code ec;
    fs::create_directories(m_root / "blobs", ec);
    if (!ec)
        fs::create_directories(m_root / "results", ec);
    if (!ec) { // a staged upload does not outlive the node that took it
        fs::remove_all(m_root / "uploads", ec);
        fs::create_directories(m_root / "uploads", ec);
    }
    if (ec)
        throw std::runtime_error("cannot create data directory " + m_root.string() + ": " +
                                 ec.message());
}

Expected<std::string> BlobStore::put(const core::Tensor& tensor) const {
    std::string digest = net::sha256Hex(tensor.bytes());
    const fs::path target = m_root / "blobs" / (digest + ".bin");
    if (fs::exists(target))
        return digest;
    // Write beside the target and rename, so a crash never leaves a half blob under its name.
    // The temporary name is unique per call: concurrent puts of the same bytes must not share it.
    static std::atomic<std::uint64_t> sequence{0};
    const fs::path temporary = target.string() + ".tmp" + std::to_string(::getpid()) + "-" +
                               std::to_string(sequence.fetch_add(1));
    // Errors name the blob, not the node's folders (researchers read them); a failed write
    // leaves nothing behind, so a full disk is not kept full by the upload it refused.
    const std::string name =
        digest.substr(0, 12) + "… of " + std::to_string(tensor.byteSize()) + " bytes";
    {
        FileDescriptor file{
            ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
        if (file.fd < 0)
            return ioError(std::string("cannot create blob ").append(name));
        if (!writeAll(file.fd, tensor.bytes().data(), tensor.byteSize(), 0)) {
            auto failed = ioError(std::string("cannot write blob ").append(name));
            ::unlink(temporary.c_str());
            return failed;
        }
    }
    std::error_code ec;
    fs::rename(temporary, target, ec);
    if (ec) {
        ::unlink(temporary.c_str());
        return makeError(
            ErrorCode::Internal,
            std::string("cannot store blob ").append(name).append(": ").append(ec.message()));
    }
    return digest;
}

Expected<std::shared_ptr<MappedFile>> BlobStore::map(const std::string& digest) const {
    return MappedFile::open(m_root / "blobs" / (digest + ".bin"));
}

bool BlobStore::has(const std::string& digest) const {
    std::error_code ignored;
    return fs::exists(m_root / "blobs" / (digest + ".bin"), ignored);
}

void BlobStore::remove(const std::string& digest) const {
    std::error_code ignored;
    fs::remove(m_root / "blobs" / (digest + ".bin"), ignored);
}

fs::path BlobStore::resultPath(const std::string& jobId) const {
    return m_root / "results" / (jobId + ".bin");
}

Expected<void> BlobStore::createResult(const std::string& jobId, std::size_t bytes) const {
    const fs::path path = resultPath(jobId);
    std::error_code ignored;
    const bool existed = fs::exists(path, ignored); // a restart: it holds accepted tiles
    FileDescriptor file{::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)};
    if (file.fd < 0)
        return ioError("cannot create result file for " + jobId);
    if (::ftruncate(file.fd, static_cast<off_t>(bytes)) != 0)
        return ioError("cannot size result file for " + jobId);
    if (existed || bytes == 0 || bytes > kMappedResultBytes)
        return {};
    // A result small enough to be written through a mapping gets its blocks now: a full disk is
    // then refused here, never met later as a SIGBUS by a tile write into a hole. (A file that
    // existed keeps whatever it has: it is written with pwrite unless fully allocated.)
    if (const int reserved = ::posix_fallocate(file.fd, 0, static_cast<off_t>(bytes));
        reserved == ENOSPC || reserved == EDQUOT) {
        errno = reserved;
        auto refused = ioError("cannot reserve " + std::to_string(bytes) +
                               " bytes for the result of " + jobId);
        ::unlink(path.c_str());
        return refused;
    }
    return {};
}

struct BlobStore::OpenFile {
    FileDescriptor file;
    // The whole file mapped for writing when it is small and fully allocated (createResult):
    // a tile row is then a copy, not a pwrite. Null: rows are written with pwrite.
    std::byte* mapped = nullptr;
    std::size_t size = 0;
    OpenFile() = default;
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    ~OpenFile() {
        if (mapped)
            ::munmap(mapped, size);
    }
};

Expected<std::shared_ptr<const BlobStore::OpenFile>>
BlobStore::openResult(const std::string& jobId) const {
    std::lock_guard lock(m_openResultsMutex);
    if (auto it = m_openResults.find(jobId); it != m_openResults.end())
        return it->second;
    auto opened = std::make_shared<OpenFile>();
    opened->file.fd = ::open(resultPath(jobId).c_str(), O_RDWR | O_CLOEXEC);
    if (opened->file.fd < 0)
        return ioError("cannot open result file for " + jobId);
    struct stat info {};
    if (::fstat(opened->file.fd, &info) != 0)
        return ioError("cannot stat result file for " + jobId);
    const auto size = static_cast<std::size_t>(info.st_size);
    const auto allocated = static_cast<std::size_t>(info.st_blocks) * 512;
    if (size > 0 && size <= kMappedResultBytes && allocated >= size) {
        void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, opened->file.fd, 0);
        if (data != MAP_FAILED) {
            opened->mapped = static_cast<std::byte*>(data);
            opened->size = size;
        }
    }
    if (m_openResults.size() >= kMaxOpenResults) // a writer still holding it keeps it open
        m_openResults.erase(m_openResults.begin());
    m_openResults.emplace(jobId, opened);
    return opened;
}

Expected<void> BlobStore::writeTile(const std::string& jobId, const core::Tensor& tile,
                                    std::int64_t row0, std::int64_t col0,
                                    std::int64_t rowLength) const {
    auto result = openResult(jobId);
    if (!result)
        return tl::unexpected(result.error());
    const OpenFile& file = **result;
    const auto item = static_cast<std::int64_t>(core::itemSize(tile.dtype()));
    const std::int64_t rows = tile.shape()[0];
    const std::int64_t cols = tile.shape()[1];
    const auto rowBytes = static_cast<std::size_t>(cols * item);
    for (std::int64_t i = 0; i < rows; ++i) {
        const auto offset = static_cast<std::size_t>(((row0 + i) * rowLength + col0) * item);
        const std::byte* row = tile.bytes().data() + static_cast<std::size_t>(i) * rowBytes;
        if (file.mapped) {
            if (offset + rowBytes > file.size)
                return makeError(ErrorCode::Internal, "tile outside the result file of " + jobId);
            std::memcpy(file.mapped + offset, row, rowBytes);
            continue;
        }
        if (!writeAll(file.file.fd, row, rowBytes, static_cast<off_t>(offset)))
            return ioError("cannot write tile into result file for " + jobId);
    }
    return {};
}

Expected<core::Tensor> BlobStore::readResult(const std::string& jobId, core::DType dtype,
                                             const core::Shape& shape) const {
    return readResultRows(jobId, dtype, 0, shape.at(0), shape.at(1));
}

Expected<core::Tensor> BlobStore::readResultRows(const std::string& jobId, core::DType dtype,
                                                 std::int64_t row0, std::int64_t rows,
                                                 std::int64_t cols) const {
    auto tensor = core::Tensor::allocate(dtype, {rows, cols});
    if (!tensor)
        return tensor;
    FileDescriptor file{::open(resultPath(jobId).c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0)
        return ioError("cannot open result file for " + jobId);
    std::byte* out = tensor->bytes().data();
    std::size_t left = tensor->byteSize();
    auto offset =
        static_cast<off_t>(row0 * cols * static_cast<std::int64_t>(core::itemSize(dtype)));
    while (left > 0) {
        const ssize_t got = ::pread(file.fd, out, left, offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return ioError("cannot read result file for " + jobId);
        out += got;
        left -= static_cast<std::size_t>(got);
        offset += got;
    }
    return tensor;
}

fs::path BlobStore::uploadPath(const std::string& uploadId) const {
    return m_root / "uploads" / (uploadId + ".part");
}

Expected<void> BlobStore::createUpload(const std::string& uploadId, std::size_t bytes) const {
    FileDescriptor file{
        ::open(uploadPath(uploadId).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
    if (file.fd < 0)
        return ioError("cannot create upload " + uploadId);
    if (::ftruncate(file.fd, static_cast<off_t>(bytes)) != 0) {
        removeUpload(uploadId);
        return ioError("cannot size upload " + uploadId);
    }
    return {};
}

Expected<void> BlobStore::writeUpload(const std::string& uploadId, std::span<const std::byte> bytes,
                                      std::size_t offset) const {
    FileDescriptor file{::open(uploadPath(uploadId).c_str(), O_WRONLY | O_CLOEXEC)};
    if (file.fd < 0 || !writeAll(file.fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)))
        return ioError("cannot write upload " + uploadId);
    return {};
}

Expected<void> BlobStore::adoptUpload(const std::string& uploadId,
                                      const std::string& digest) const {
    const fs::path target = m_root / "blobs" / (digest + ".bin");
    std::error_code ec;
    if (fs::exists(target, ec)) { // the same bytes are stored already
        removeUpload(uploadId);
        return {};
    }
    fs::rename(uploadPath(uploadId), target, ec);
    if (ec)
        return makeError(ErrorCode::Internal,
                         "cannot store upload " + uploadId + ": " + ec.message());
    return {};
}

void BlobStore::removeUpload(const std::string& uploadId) const {
    std::error_code ignored;
    fs::remove(uploadPath(uploadId), ignored);
}

void BlobStore::removeResult(const std::string& jobId) const {
    {
        std::lock_guard lock(m_openResultsMutex);
        m_openResults.erase(jobId);
    }
    std::error_code ignored;
    fs::remove(resultPath(jobId), ignored);
}

} // namespace goblin::labnode
