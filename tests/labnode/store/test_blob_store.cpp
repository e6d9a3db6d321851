// Tests of BlobStore: content-addressed input blobs and in-place result files.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "goblin/net/content_digest.hpp"
#include "store/blob_store.hpp"

using goblin::core::DType;
using goblin::core::Shape;
using goblin::core::Tensor;
using goblin::labnode::BlobStore;
using goblin::net::sha256Hex;

namespace fs = std::filesystem;

namespace {

Tensor randomMatrix(DType dtype, std::int64_t rows, std::int64_t cols, unsigned seed) {
    Tensor tensor = Tensor::allocate(dtype, Shape{rows, cols}).value();
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(1.0, 10.0);
    for (std::int64_t i = 0; i < rows * cols; ++i) {
        const double value = (i % 2 == 0 ? 1.0 : -1.0) * uniform(random);
        if (dtype == DType::F64)
            tensor.values<double>()[static_cast<std::size_t>(i)] = value;
        else
            tensor.values<float>()[static_cast<std::size_t>(i)] = static_cast<float>(value);
    }
    return tensor;
}

// Rows [row0, row0+rows) and cols [col0, col0+cols) of a matrix, as a new tensor.
Tensor block(const Tensor& matrix, std::int64_t row0, std::int64_t rows, std::int64_t col0,
             std::int64_t cols) {
    return goblin::core::copyToTensor(
               goblin::core::subView(goblin::core::viewOf(matrix), row0, rows, col0, cols))
        .value();
}

bool sameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

std::size_t filesIn(const fs::path& folder) {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder))
        ++count;
    return count;
}

std::span<const std::byte> bytesOf(std::string_view text) {
    return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

} // namespace

class TestBlobStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void sha256KnownVectors();
    void putIsContentAddressedAndIdempotent();
    void mapReturnsTheBytes();
    void releaseDropsTheViewsPagesOnly();
    void copyOutReadsAColumnBlockWithoutKeepingIt();
    void mapOfUnknownDigestFails();
    void removeDeletesTheBlob();
    void concurrentPutsOfTheSameBytes();
    void writeTilesBuildsTheResult_data();
    void writeTilesBuildsTheResult();
    void sparseResultOfAnEarlierNodeKeepsItsTiles();
    void readResultOfMissingJobFails();
    void removeResult();

private:
    fs::path root() const { return fs::path(m_dir->path().toStdString()); }
    std::unique_ptr<QTemporaryDir> m_dir;
};

void TestBlobStore::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
}

void TestBlobStore::cleanup() {
    m_dir.reset();
}

void TestBlobStore::sha256KnownVectors() {
    QCOMPARE(sha256Hex(bytesOf("")),
             std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(sha256Hex(bytesOf("abc")),
             std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

void TestBlobStore::putIsContentAddressedAndIdempotent() {
    BlobStore store(root());
    const Tensor a = randomMatrix(DType::F32, 7, 9, 1);
    const auto digest = store.put(a);
    QVERIFY2(digest.has_value(), digest ? "" : digest.error().message.c_str());
    QCOMPARE(digest->size(), std::size_t{64});
    QCOMPARE(*digest, sha256Hex(a.bytes()));
    QVERIFY(fs::exists(root() / "blobs" / (*digest + ".bin")));
    QCOMPARE(fs::file_size(root() / "blobs" / (*digest + ".bin")), std::uintmax_t{7 * 9 * 4});

    // The same bytes again (even in another tensor object) give the same blob, once.
    const Tensor copy = block(a, 0, 7, 0, 9);
    QCOMPARE(store.put(copy).value(), *digest);
    QCOMPARE(store.put(a).value(), *digest);
    QCOMPARE(filesIn(root() / "blobs"), std::size_t{1}); // no second copy, no temporary left

    // Different bytes, different blob.
    const Tensor b = randomMatrix(DType::F32, 7, 9, 2);
    const auto other = store.put(b);
    QVERIFY(other.has_value());
    QVERIFY(*other != *digest);
    QCOMPARE(filesIn(root() / "blobs"), std::size_t{2});

    // A second store on the same folder finds the blob already there.
    BlobStore again(root());
    QCOMPARE(again.put(a).value(), *digest);
    QCOMPARE(filesIn(root() / "blobs"), std::size_t{2});
}

void TestBlobStore::mapReturnsTheBytes() {
    BlobStore store(root());
    const Tensor a = randomMatrix(DType::F64, 33, 17, 3);
    const auto digest = store.put(a).value();
    const auto mapped = store.map(digest);
    QVERIFY2(mapped.has_value(), mapped ? "" : mapped.error().message.c_str());
    QVERIFY(sameBytes((*mapped)->bytes(), a.bytes()));
    // The mapping stays valid while held, even after the blob's name is removed.
    store.remove(digest);
    QVERIFY(sameBytes((*mapped)->bytes(), a.bytes()));
}

// Resident bytes of this process's mappings of `path`, from /proc/self/smaps.
static std::size_t residentBytesOf(const fs::path& path) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    std::size_t total = 0;
    while (std::getline(smaps, line)) {
        if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
            line.find('-') != std::string::npos && line.find(':') != std::string::npos) {
            inside = line.size() >= path.string().size() &&
                     line.compare(line.size() - path.string().size(), std::string::npos,
                                  path.string()) == 0;
        } else if (inside && line.rfind("Rss:", 0) == 0) {
            total += std::stoul(line.substr(4)) * 1024;
        }
    }
    return total;
}

void TestBlobStore::releaseDropsTheViewsPagesOnly() {
    BlobStore store(root());
    const Tensor matrix = randomMatrix(DType::F32, 1024, 2048, 11); // 8 MiB
    const std::string digest = store.put(matrix).value();
    const auto mapped = store.map(digest).value();
    const fs::path path = fs::canonical(root() / "blobs" / (digest + ".bin"));
    const goblin::core::MatrixView whole{DType::F32, mapped->bytes().data(), 1024, 2048, 2048};
    QVERIFY(sameBytes(mapped->bytes(), matrix.bytes())); // reads every page
    QVERIFY(residentBytesOf(path) >= matrix.byteSize());

    // 64 columns of every row: under 4 MiB of elements, but the span is the whole file. A span
    // under 4 MiB (16 rows) is left alone.
    mapped->release(goblin::core::subView(whole, 0, 16, 0, 2048));
    QVERIFY(residentBytesOf(path) >= matrix.byteSize());
    mapped->release(goblin::core::subView(whole, 0, 1024, 100, 64));
    QVERIFY2(residentBytesOf(path) <= 2 * 4096, std::to_string(residentBytesOf(path)).c_str());
    QVERIFY(sameBytes(mapped->bytes(), matrix.bytes())); // mapped again from the page cache
}

void TestBlobStore::copyOutReadsAColumnBlockWithoutKeepingIt() {
    BlobStore store(root());
    const Tensor matrix = randomMatrix(DType::F32, 1024, 4096, 12); // 16 MiB, rows of 16 KiB
    const std::string digest = store.put(matrix).value();
    const auto mapped = store.map(digest).value();
    const fs::path path = fs::canonical(root() / "blobs" / (digest + ".bin"));
    const goblin::core::MatrixView whole{DType::F32, mapped->bytes().data(), 1024, 4096, 4096};
    const auto columns = goblin::core::subView(whole, 0, 1024, 100, 64);
    const auto copied = mapped->copyOut(columns);
    QVERIFY(copied.has_value());
    QCOMPARE(copied->shape(), (Shape{1024, 64}));
    QVERIFY(sameBytes(copied->bytes(), goblin::core::copyToTensor(columns)->bytes()));
    // The copy through the mapping (copyToTensor) above mapped the span; copyOut's chunks are
    // released as they go, so reading it again through copyOut leaves nothing mapped.
    QVERIFY(mapped->copyOut(columns).has_value());
    QVERIFY2(residentBytesOf(path) <= 2 * 4096, std::to_string(residentBytesOf(path)).c_str());
}

void TestBlobStore::mapOfUnknownDigestFails() {
    BlobStore store(root());
    const auto mapped = store.map(std::string(64, 'f'));
    QVERIFY(!mapped.has_value());
    QCOMPARE(mapped.error().code, goblin::ErrorCode::Internal);
}

void TestBlobStore::removeDeletesTheBlob() {
    BlobStore store(root());
    const Tensor a = randomMatrix(DType::F32, 4, 4, 4);
    const Tensor b = randomMatrix(DType::F32, 4, 4, 5);
    const auto digestA = store.put(a).value();
    const auto digestB = store.put(b).value();
    store.remove(digestA);
    QVERIFY(!store.map(digestA).has_value());
    QVERIFY(!fs::exists(root() / "blobs" / (digestA + ".bin")));
    QVERIFY(store.map(digestB).has_value()); // the other one is untouched
    store.remove(digestA);                   // removing twice is harmless
    // And it can be stored again.
    QCOMPARE(store.put(a).value(), digestA);
    QVERIFY(sameBytes(store.map(digestA).value()->bytes(), a.bytes()));
}

void TestBlobStore::concurrentPutsOfTheSameBytes() {
    // Two researchers may submit the same matrix at once; puts run on the worker pool.
    BlobStore store(root());
    for (unsigned round = 0; round < 4; ++round) {
        const Tensor tensor = randomMatrix(DType::F64, 512, 256, 100 + round); // 1 MiB
        const std::string expected = sha256Hex(tensor.bytes());
        std::vector<std::string> digests(6);
        std::vector<std::thread> threads;
        for (std::size_t t = 0; t < digests.size(); ++t) {
            threads.emplace_back([&, t] {
                auto digest = store.put(tensor);
                digests[t] = digest ? *digest : "error: " + digest.error().message;
            });
        }
        for (auto& thread : threads)
            thread.join();
        for (const std::string& digest : digests)
            QVERIFY2(digest == expected, digest.c_str());
        const auto mapped = store.map(expected);
        QVERIFY(mapped.has_value());
        QVERIFY(sameBytes((*mapped)->bytes(), tensor.bytes()));
    }
    QCOMPARE(filesIn(root() / "blobs"), std::size_t{4}); // no temporaries left behind
}

void TestBlobStore::writeTilesBuildsTheResult_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("splitRow");
    QTest::addColumn<int>("splitCol");
    QTest::newRow("f64 7x11 uneven") << int(DType::F64) << 7 << 11 << 3 << 8;
    QTest::newRow("f32 64x48 even") << int(DType::F32) << 64 << 48 << 32 << 24;
    QTest::newRow("f32 2x2 single cells") << int(DType::F32) << 2 << 2 << 1 << 1;
    // Over 64 MiB: written with pwrite instead of through a mapping.
    QTest::newRow("f32 4100x4100 unmapped") << int(DType::F32) << 4100 << 4100 << 2049 << 17;
}

void TestBlobStore::writeTilesBuildsTheResult() {
    QFETCH(int, dtype);
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, splitRow);
    QFETCH(int, splitCol);
    const auto type = static_cast<DType>(dtype);
    BlobStore store(root());
    const Tensor expected = randomMatrix(type, rows, cols, 6);
    QVERIFY(store.createResult("j-1", expected.byteSize()).has_value());
    QCOMPARE(fs::file_size(root() / "results" / "j-1.bin"), std::uintmax_t{expected.byteSize()});

    struct Piece {
        std::int64_t row0, rows, col0, cols;
    };
    // Written out of order, the bottom-right first.
    const std::vector<Piece> pieces = {
        {splitRow, rows - splitRow, splitCol, cols - splitCol},
        {0, splitRow, 0, splitCol},
        {splitRow, rows - splitRow, 0, splitCol},
        {0, splitRow, splitCol, cols - splitCol},
    };
    for (const Piece& piece : pieces) {
        const Tensor tile = block(expected, piece.row0, piece.rows, piece.col0, piece.cols);
        QVERIFY(store.writeTile("j-1", tile, piece.row0, piece.col0, cols).has_value());
    }
    const auto result = store.readResult("j-1", type, Shape{rows, cols});
    QVERIFY2(result.has_value(), result ? "" : result.error().message.c_str());
    QCOMPARE(result->dtype(), type);
    QCOMPARE(result->shape(), (Shape{rows, cols}));
    QVERIFY(sameBytes(result->bytes(), expected.bytes()));
    QCOMPARE(fs::file_size(root() / "results" / "j-1.bin"), std::uintmax_t{expected.byteSize()});

    // Creating the result again (a restart) keeps the tiles already written.
    QVERIFY(store.createResult("j-1", expected.byteSize()).has_value());
    QVERIFY(sameBytes(store.readResult("j-1", type, Shape{rows, cols})->bytes(), expected.bytes()));
}

void TestBlobStore::sparseResultOfAnEarlierNodeKeepsItsTiles() {
    // A result file made by a node that only sized it (no blocks reserved) with a tile already
    // in it: a restarted node keeps that tile and writes the others (with pwrite: a write into a
    // hole through a mapping could meet a full disk as SIGBUS).
    BlobStore store(root());
    const Tensor expected = randomMatrix(DType::F32, 32, 40, 9);
    const fs::path path = root() / "results" / "j-old.bin";
    {
        std::ofstream file(path, std::ios::binary);
        file.write(reinterpret_cast<const char*>(expected.bytes().data()), 4 * 40 * 8); // rows 0-7
    }
    fs::resize_file(path, expected.byteSize());
    QVERIFY(store.createResult("j-old", expected.byteSize()).has_value());
    QVERIFY(store.writeTile("j-old", block(expected, 8, 24, 0, 40), 8, 0, 40).has_value());
    const auto result = store.readResult("j-old", DType::F32, Shape{32, 40});
    QVERIFY(result.has_value());
    QVERIFY(sameBytes(result->bytes(), expected.bytes()));
}

void TestBlobStore::readResultOfMissingJobFails() {
    BlobStore store(root());
    QVERIFY(!store.readResult("j-none", DType::F32, Shape{2, 2}).has_value());
    QVERIFY(!store.writeTile("j-none", randomMatrix(DType::F32, 1, 1, 7), 0, 0, 1).has_value());
    // A result file shorter than the shape asked for is an error, not garbage.
    QVERIFY(store.createResult("j-short", 8).has_value());
    QVERIFY(!store.readResult("j-short", DType::F32, Shape{2, 2}).has_value());
}

void TestBlobStore::removeResult() {
    BlobStore store(root());
    QVERIFY(store.createResult("j-1", 16).has_value());
    QVERIFY(store.createResult("j-2", 16).has_value());
    store.removeResult("j-1");
    QVERIFY(!fs::exists(root() / "results" / "j-1.bin"));
    QVERIFY(!store.readResult("j-1", DType::F32, Shape{2, 2}).has_value());
    QVERIFY(store.readResult("j-2", DType::F32, Shape{2, 2}).has_value());
}

QTEST_APPLESS_MAIN(TestBlobStore)
#include "test_blob_store.moc"
