// Tests of StagedUploads on a real blob store and worker pool: blocks accepted in row order become
// a blob of exactly the sent bits; out-of-order, overlapping, misshapen, wrong-dtype and
// past-the-end blocks (and one sent while the last is writing) are refused with the upload kept
// and nothing of them stored; a NaN block drops the upload; drop_upload and a closed connection
// delete the file; the limits (uploads per connection, elements, free disk); another researcher's
// or another connection's upload id is not usable; take refuses incomplete or repeated uploads.
// (Routing of the messages is test_researcher_desk's; their wire form test_researcher_messages'.)
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "goblin/net/content_digest.hpp"
#include "kinds/matmul/staged_uploads.hpp"
#include "labnode/node_harness.hpp"
#include "labnode/request_replies.hpp"
#include "support/random_tensors.hpp"
#include "support/tensor_bits.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

struct Rig : RoleRig {
    ResearcherDesk desk{context, peers};
    StagedUploads uploads{context, peers, desk};
    std::int64_t nextId = 100;

    // A researcher connection whose hello was accepted.
    std::shared_ptr<FakePeerLink> connect(std::uint64_t peer, std::int64_t researcher) {
        auto link = std::make_shared<FakePeerLink>();
        Peer& added = peers.add(peer, link, PeerRole::Researcher);
        added.ready = true;
        added.researcherId = researcher;
        return link;
    }
    ResearcherRequest request(std::uint64_t peer, std::int64_t researcher) {
        return ResearcherRequest{peer, researcher, nextId++};
    }
    std::size_t stagedFiles() const {
        std::size_t count = 0;
        for ([[maybe_unused]] const auto& entry :
             std::filesystem::directory_iterator(node.blobs.root() / "uploads"))
            ++count;
        return count;
    }
};

// Stages a rows × cols matrix; its id, or empty when refused.
std::string begin(Rig& rig, const FakePeerLink& link, ResearcherRequest request, core::DType dtype,
                  std::int64_t rows, std::int64_t cols) {
    rig.uploads.begin(request, net::Upload{request.requestId, dtype, rows, cols});
    const net::Message reply = replyTo(link, request.requestId);
    if (reply.type() != "upload_ready")
        return {};
    return std::string(reply.control.at("upload").as_string());
}

// Sends a block and runs the node until it answers: the rows it then holds, or -1 on an error.
std::int64_t sendRows(Rig& rig, const FakePeerLink& link, ResearcherRequest request,
                      const std::string& upload, std::int64_t row0, const core::Tensor& block) {
    rig.uploads.receiveRows(request, net::UploadRows{request.requestId, upload, row0,
                                                     std::make_shared<const core::Tensor>(block)});
    if (!rig.node.waitUntil([&] { return !replyTo(link, request.requestId).type().empty(); }))
        return -2;
    const net::Message reply = replyTo(link, request.requestId);
    if (reply.type() != "rows_stored" || reply.control.at("upload").as_string() != upload)
        return -1;
    return reply.control.at("rows").as_int64();
}

// Rows row0 … row0+count−1 of a 2-D tensor, as a tensor of their own.
core::Tensor rowsOf(const core::Tensor& full, std::int64_t row0, std::int64_t count) {
    const std::int64_t cols = full.shape()[1];
    core::Tensor block = core::Tensor::allocate(full.dtype(), {count, cols}).value();
    const std::size_t rowBytes = static_cast<std::size_t>(cols) * core::itemSize(full.dtype());
    std::memcpy(block.bytes().data(),
                full.bytes().data() + static_cast<std::size_t>(row0) * rowBytes,
                static_cast<std::size_t>(count) * rowBytes);
    return block;
}

// Takes `ids` off the book and runs the node until the outcome is there.
Expected<std::vector<StagedMatrix>> take(Rig& rig, ResearcherRequest request,
                                         const std::vector<std::string>& ids) {
    std::optional<Expected<std::vector<StagedMatrix>>> outcome;
    rig.uploads.take(request, ids, [&](Expected<std::vector<StagedMatrix>> got) { outcome = got; });
    if (!rig.node.waitUntil([&] { return outcome.has_value(); }))
        return makeError(ErrorCode::Timeout, "take never answered");
    return *outcome;
}

// The stored blob's bytes equal the tensor's, bit for bit.
bool blobHolds(const BlobStore& blobs, const std::string& digest, const core::Tensor& expected) {
    auto mapped = blobs.map(digest);
    if (!mapped)
        return false;
    const auto bytes = (*mapped)->bytes();
    return bytes.size() == expected.byteSize() &&
           std::memcmp(bytes.data(), expected.bytes().data(), bytes.size()) == 0;
}

constexpr std::uint64_t kPeer = 1;
constexpr std::int64_t kResearcher = 42;

} // namespace

class TestStagedUploads : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void blocksInRowOrderBecomeABlobOfExactlyTheSentBits();
    void refusedBlocksKeepTheUploadAndStoreNothing();
    void aBlockSentWhileTheLastIsWritingIsRefused();
    void aNonFiniteBlockDropsTheUpload();
    void dropUploadDeletesItsFileAndFreesItsPlace();
    void uploadsPerConnectionElementsAndDiskAreLimited();
    void anotherResearchersOrConnectionsUploadIsNotUsable();
    void closingAConnectionDeletesOnlyItsUploads();
    void takeRefusesIncompleteOrRepeatedUploadsAndTakesNothing();
};

void TestStagedUploads::blocksInRowOrderBecomeABlobOfExactlyTheSentBits() {
    for (const core::DType dtype : {core::DType::F32, core::DType::F64}) {
        Rig rig;
        auto link = rig.connect(kPeer, kResearcher);
        const core::Tensor full = goblin::testing::randomTensor(dtype, {7, 3}, 21);
        const std::string id = begin(rig, *link, rig.request(kPeer, kResearcher), dtype, 7, 3);
        QVERIFY(id.starts_with("u-"));
        // The file has the matrix's full size from the start.
        QCOMPARE(rig.stagedFiles(), std::size_t{1});
        QCOMPARE(
            std::filesystem::file_size(
                std::filesystem::directory_iterator(rig.node.blobs.root() / "uploads")->path()),
            std::uintmax_t{7 * 3 * core::itemSize(dtype)});
        std::int64_t row0 = 0;
        for (const std::int64_t count : {3, 1, 3}) {
            QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), id, row0,
                              rowsOf(full, row0, count)),
                     row0 + count);
            row0 += count;
        }
        auto taken = take(rig, rig.request(kPeer, kResearcher), {id});
        QVERIFY2(taken.has_value(), taken ? "" : taken.error().message.c_str());
        QCOMPARE(taken->size(), std::size_t{1});
        const StagedMatrix& matrix = taken->at(0);
        QVERIFY(matrix.dtype == dtype);
        QCOMPARE(matrix.rows, std::int64_t{7});
        QCOMPARE(matrix.cols, std::int64_t{3});
        QCOMPARE(matrix.digest, net::sha256Hex(full.bytes()));
        QVERIFY(blobHolds(rig.node.blobs, matrix.digest, full));
        // The file became the blob: no staged file is left, and the id is gone.
        QCOMPARE(rig.stagedFiles(), std::size_t{0});
        const auto drop = rig.request(kPeer, kResearcher);
        rig.uploads.drop(drop, net::DropUpload{drop.requestId, id});
        QCOMPARE(errorOf(*link, drop.requestId).first, std::string("not_found"));
    }
}

void TestStagedUploads::refusedBlocksKeepTheUploadAndStoreNothing() {
    Rig rig;
    auto link = rig.connect(kPeer, kResearcher);
    const core::Tensor full = goblin::testing::randomTensor(core::DType::F32, {6, 4}, 31);
    const core::Tensor other = goblin::testing::randomTensor(core::DType::F32, {6, 4}, 32);
    const std::string id =
        begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 6, 4);
    QVERIFY(!id.empty());
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), id, 0, rowsOf(full, 0, 2)),
             std::int64_t{2});
    struct Refused {
        const char* what;
        std::int64_t row0;
        core::Tensor block;
        std::string code, message;
    };
    const std::string shapeRule = "upload " + id + " takes f32 rows of 4 columns, at most 4 more";
    const std::vector<Refused> refusals{
        {"out of order", 4, rowsOf(other, 4, 2), "invalid_input",
         "upload " + id + " expects row 2, not row 4"},
        {"overlapping", 1, rowsOf(other, 1, 2), "invalid_input",
         "upload " + id + " expects row 2, not row 1"},
        {"from row 0 again", 0, rowsOf(other, 0, 4), "invalid_input",
         "upload " + id + " expects row 2, not row 0"},
        {"wrong width", 2, goblin::testing::randomTensor(core::DType::F32, {2, 5}, 33),
         "shape_mismatch", shapeRule},
        {"wrong dtype", 2, goblin::testing::randomTensor(core::DType::F64, {2, 4}, 34),
         "shape_mismatch", shapeRule},
        {"past the end", 2, goblin::testing::randomTensor(core::DType::F32, {5, 4}, 35),
         "shape_mismatch", shapeRule},
        {"one-dimensional", 2, goblin::testing::randomTensor(core::DType::F32, {4}, 36),
         "shape_mismatch", shapeRule},
        {"three-dimensional", 2, goblin::testing::randomTensor(core::DType::F32, {1, 2, 4}, 37),
         "shape_mismatch", shapeRule},
        {"no rows", 2, core::Tensor::allocate(core::DType::F32, {0, 4}).value(), "shape_mismatch",
         shapeRule},
    };
    for (const Refused& refused : refusals) {
        const auto request = rig.request(kPeer, kResearcher);
        QCOMPARE(sendRows(rig, *link, request, id, refused.row0, refused.block), std::int64_t{-1});
        const auto [code, message] = errorOf(*link, request.requestId);
        QVERIFY2(code == refused.code, refused.what);
        QCOMPARE(message, refused.message);
    }
    QCOMPARE(link->count("rows_stored"), std::size_t{1});
    // The upload was kept at row 2: the right rows complete it, and the blob holds exactly the
    // accepted blocks (no refused block's bits were written anywhere).
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), id, 2, rowsOf(full, 2, 4)),
             std::int64_t{6});
    auto taken = take(rig, rig.request(kPeer, kResearcher), {id});
    QVERIFY(taken.has_value());
    QCOMPARE(taken->at(0).digest, net::sha256Hex(full.bytes()));
    QVERIFY(blobHolds(rig.node.blobs, taken->at(0).digest, full));
}

void TestStagedUploads::aBlockSentWhileTheLastIsWritingIsRefused() {
    Rig rig;
    auto link = rig.connect(kPeer, kResearcher);
    const core::Tensor full = goblin::testing::randomTensor(core::DType::F64, {4, 2}, 41);
    const std::string id =
        begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F64, 4, 2);
    const auto first = rig.request(kPeer, kResearcher);
    const auto second = rig.request(kPeer, kResearcher);
    rig.uploads.receiveRows(first,
                            net::UploadRows{first.requestId, id, 0,
                                            std::make_shared<core::Tensor>(rowsOf(full, 0, 2))});
    // The core thread has not run since: the first block is still on its worker.
    rig.uploads.receiveRows(second,
                            net::UploadRows{second.requestId, id, 2,
                                            std::make_shared<core::Tensor>(rowsOf(full, 2, 2))});
    QCOMPARE(errorOf(*link, second.requestId),
             std::pair(std::string("invalid_input"),
                       "upload " + id + " is still writing its last block"));
    QVERIFY(rig.node.waitUntil([&] { return link->count("rows_stored") == 1; }));
    QCOMPARE(replyTo(*link, first.requestId).control.at("rows").as_int64(), std::int64_t{2});
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), id, 2, rowsOf(full, 2, 2)),
             std::int64_t{4});
    auto taken = take(rig, rig.request(kPeer, kResearcher), {id});
    QVERIFY(taken.has_value());
    QVERIFY(blobHolds(rig.node.blobs, taken->at(0).digest, full));
}

void TestStagedUploads::aNonFiniteBlockDropsTheUpload() {
    for (const double bad :
         {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}) {
        Rig rig;
        auto link = rig.connect(kPeer, kResearcher);
        const core::Tensor full = goblin::testing::randomTensor(core::DType::F32, {5, 3}, 51);
        const std::string id =
            begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 5, 3);
        QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), id, 0, rowsOf(full, 0, 2)),
                 std::int64_t{2});
        core::Tensor block = rowsOf(full, 2, 2);
        block.values<float>()[1 * 3 + 2] = static_cast<float>(bad); // row 3, column 2 of A
        const auto request = rig.request(kPeer, kResearcher);
        QCOMPARE(sendRows(rig, *link, request, id, 2, block), std::int64_t{-1});
        QCOMPARE(errorOf(*link, request.requestId),
                 std::pair(std::string("invalid_input"),
                           "row 3, column 2 holds NaN or Inf; verification needs finite inputs; "
                           "upload " +
                               id + " was dropped"));
        QCOMPARE(rig.stagedFiles(), std::size_t{0});
        const auto after = rig.request(kPeer, kResearcher);
        QCOMPARE(sendRows(rig, *link, after, id, 2, rowsOf(full, 2, 2)), std::int64_t{-1});
        QCOMPARE(errorOf(*link, after.requestId),
                 std::pair(std::string("not_found"), "no upload " + id));
    }
}

void TestStagedUploads::dropUploadDeletesItsFileAndFreesItsPlace() {
    Rig rig;
    auto link = rig.connect(kPeer, kResearcher);
    std::vector<std::string> ids;
    for (int i = 0; i < 4; ++i)
        ids.push_back(begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 3, 3));
    QVERIFY(!ids.back().empty());
    const core::Tensor block = goblin::testing::randomTensor(core::DType::F32, {1, 3}, 61);
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), ids[0], 0, block),
             std::int64_t{1});
    QCOMPARE(rig.stagedFiles(), std::size_t{4});
    const auto drop = rig.request(kPeer, kResearcher);
    rig.uploads.drop(drop, net::DropUpload{drop.requestId, ids[0]});
    const net::Message dropped = replyTo(*link, drop.requestId);
    QCOMPARE(std::string(dropped.type()), std::string("upload_dropped"));
    QCOMPARE(std::string(dropped.control.at("upload").as_string()), ids[0]);
    QCOMPARE(rig.stagedFiles(), std::size_t{3});
    // The id is gone for every request.
    const auto again = rig.request(kPeer, kResearcher);
    rig.uploads.drop(again, net::DropUpload{again.requestId, ids[0]});
    QCOMPARE(errorOf(*link, again.requestId),
             std::pair(std::string("not_found"), "no upload " + ids[0]));
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), ids[0], 1, block),
             std::int64_t{-1});
    auto taken = take(rig, rig.request(kPeer, kResearcher), {ids[0]});
    QVERIFY(!taken);
    QVERIFY(taken.error().code == ErrorCode::NotFound);
    // Its place on the connection is free again.
    QVERIFY(!begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 3, 3).empty());
    QCOMPARE(rig.stagedFiles(), std::size_t{4});
}

void TestStagedUploads::uploadsPerConnectionElementsAndDiskAreLimited() {
    Rig rig;
    auto link = rig.connect(kPeer, kResearcher);
    for (int i = 0; i < 4; ++i)
        QVERIFY(
            !begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 2, 2).empty());
    const auto fifth = rig.request(kPeer, kResearcher);
    QVERIFY(begin(rig, *link, fifth, core::DType::F32, 2, 2).empty());
    QCOMPARE(errorOf(*link, fifth.requestId),
             std::pair(std::string("limit_exceeded"),
                       std::string("a connection stages at most 4 uploads")));
    QCOMPARE(rig.stagedFiles(), std::size_t{4});
    // The limit is per connection: the same researcher's second connection may stage.
    auto second = rig.connect(2, kResearcher);
    QVERIFY(!begin(rig, *second, rig.request(2, kResearcher), core::DType::F32, 2, 2).empty());
    QCOMPARE(rig.stagedFiles(), std::size_t{5});
    // At most 2^40 elements (2^21 × 2^20 is 2^41), whatever the disk.
    const auto huge = rig.request(2, kResearcher);
    QVERIFY(
        begin(rig, *second, huge, core::DType::F32, std::int64_t{1} << 21, std::int64_t{1} << 20)
            .empty());
    QCOMPARE(errorOf(*second, huge.requestId),
             std::pair(std::string("limit_exceeded"),
                       std::string("an upload holds at most 2^40 elements")));
    // 2^39 f64 elements (4 TiB) fit the element limit but not the test machine's disk.
    const auto large = rig.request(2, kResearcher);
    QVERIFY(
        begin(rig, *second, large, core::DType::F64, std::int64_t{1} << 30, std::int64_t{1} << 9)
            .empty());
    const auto [code, message] = errorOf(*second, large.requestId);
    QCOMPARE(code, std::string("limit_exceeded"));
    QVERIFY2(message.find("MiB free; this upload needs 4194304 MiB") != std::string::npos,
             message.c_str());
    QCOMPARE(rig.stagedFiles(), std::size_t{5});
}

void TestStagedUploads::anotherResearchersOrConnectionsUploadIsNotUsable() {
    Rig rig;
    auto owner = rig.connect(kPeer, kResearcher);
    auto stranger = rig.connect(2, 43);
    auto sibling = rig.connect(3, kResearcher); // the owner's other connection
    const core::Tensor full = goblin::testing::randomTensor(core::DType::F32, {4, 2}, 71);
    const std::string id =
        begin(rig, *owner, rig.request(kPeer, kResearcher), core::DType::F32, 4, 2);
    QCOMPARE(sendRows(rig, *owner, rig.request(kPeer, kResearcher), id, 0, rowsOf(full, 0, 2)),
             std::int64_t{2});
    const std::pair<std::string, std::string> notFound{"not_found", "no upload " + id};
    for (const auto& [peer, researcher, link] :
         {std::tuple(std::uint64_t{2}, std::int64_t{43}, stranger),
          std::tuple(std::uint64_t{3}, kResearcher, sibling)}) {
        const auto rows = rig.request(peer, researcher);
        QCOMPARE(sendRows(rig, *link, rows, id, 2, rowsOf(full, 2, 2)), std::int64_t{-1});
        QCOMPARE(errorOf(*link, rows.requestId), notFound);
        const auto drop = rig.request(peer, researcher);
        rig.uploads.drop(drop, net::DropUpload{drop.requestId, id});
        QCOMPARE(errorOf(*link, drop.requestId), notFound);
        auto taken = take(rig, rig.request(peer, researcher), {id});
        QVERIFY(!taken);
        QVERIFY(taken.error().code == ErrorCode::NotFound);
    }
    QVERIFY(owner->count("error") == 0);
    // The owner's upload is untouched: it completes with the owner's bits.
    QCOMPARE(sendRows(rig, *owner, rig.request(kPeer, kResearcher), id, 2, rowsOf(full, 2, 2)),
             std::int64_t{4});
    auto taken = take(rig, rig.request(kPeer, kResearcher), {id});
    QVERIFY(taken.has_value());
    QVERIFY(blobHolds(rig.node.blobs, taken->at(0).digest, full));
}

void TestStagedUploads::closingAConnectionDeletesOnlyItsUploads() {
    Rig rig;
    auto closing = rig.connect(kPeer, kResearcher);
    auto staying = rig.connect(2, kResearcher);
    begin(rig, *closing, rig.request(kPeer, kResearcher), core::DType::F32, 2, 2);
    begin(rig, *closing, rig.request(kPeer, kResearcher), core::DType::F64, 2, 2);
    const std::string kept =
        begin(rig, *staying, rig.request(2, kResearcher), core::DType::F32, 1, 2);
    QCOMPARE(rig.stagedFiles(), std::size_t{3});
    rig.uploads.onPeerClosed(kPeer);
    QCOMPARE(rig.stagedFiles(), std::size_t{1});
    QVERIFY(rig.node.logged("deleted 2 upload(s)"));
    const core::Tensor row = goblin::testing::randomTensor(core::DType::F32, {1, 2}, 81);
    QCOMPARE(sendRows(rig, *staying, rig.request(2, kResearcher), kept, 0, row), std::int64_t{1});
}

void TestStagedUploads::takeRefusesIncompleteOrRepeatedUploadsAndTakesNothing() {
    Rig rig;
    auto link = rig.connect(kPeer, kResearcher);
    const core::Tensor a = goblin::testing::randomTensor(core::DType::F32, {4, 3}, 91);
    const core::Tensor b = goblin::testing::randomTensor(core::DType::F32, {3, 2}, 92);
    const std::string idA =
        begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 4, 3);
    const std::string idB =
        begin(rig, *link, rig.request(kPeer, kResearcher), core::DType::F32, 3, 2);
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), idA, 0, a), std::int64_t{4});
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), idB, 0, rowsOf(b, 0, 2)),
             std::int64_t{2});
    auto incomplete = take(rig, rig.request(kPeer, kResearcher), {idA, idB});
    QVERIFY(!incomplete);
    QVERIFY(incomplete.error().code == ErrorCode::InvalidInput);
    QCOMPARE(incomplete.error().message, "upload " + idB + " has 2 of its 3 rows");
    auto twice = take(rig, rig.request(kPeer, kResearcher), {idA, idA});
    QVERIFY(!twice);
    QVERIFY(twice.error().code == ErrorCode::InvalidInput);
    QCOMPARE(twice.error().message, "upload " + idA + " is named twice");
    // Nothing was taken: both files are still staged, and B can still be finished.
    QCOMPARE(rig.stagedFiles(), std::size_t{2});
    QCOMPARE(sendRows(rig, *link, rig.request(kPeer, kResearcher), idB, 2, rowsOf(b, 2, 1)),
             std::int64_t{3});
    auto taken = take(rig, rig.request(kPeer, kResearcher), {idA, idB});
    QVERIFY(taken.has_value());
    QCOMPARE(taken->size(), std::size_t{2});
    QVERIFY(blobHolds(rig.node.blobs, taken->at(0).digest, a));
    QVERIFY(blobHolds(rig.node.blobs, taken->at(1).digest, b));
    QCOMPARE(rig.stagedFiles(), std::size_t{0});
}

QTEST_APPLESS_MAIN(TestStagedUploads)
#include "test_staged_uploads.moc"
