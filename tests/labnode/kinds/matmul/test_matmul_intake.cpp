// Tests of MatmulIntake on a real researcher desk, staged uploads, blob store and worker pool: a
// whole submission writes its job row, exactly its queued tasks and blobs of the sent bits and
// hands the job to `created`; a requested tile is clamped to the product; shape, dtype, NaN/Inf and
// tile-limit refusals answer the exact error and leave nothing stored (a refused job's blobs are
// deleted unless a live job shares them); staged uploads become the job's blobs under the same
// rules; a stream is granted only for a whole product with tiles of at least a MiB.
// (Planning itself is test_tile_planner's; the job's life after creation test_matmul_jobs'.)
#include <QtTest/QtTest>

#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "goblin/net/content_digest.hpp"
#include "goblin/net/messages/researcher_messages.hpp"
#include "kinds/matmul/matmul_intake.hpp"
#include "labnode/node_harness.hpp"
#include "labnode/request_replies.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr std::uint64_t kPeer = 1;

struct CreatedJob {
    ResearcherRequest request;
    LoadedJob loaded;
    plan::TilePlan plan;
};

struct Rig : RoleRig {
    explicit Rig(MatmulSettings settings = {})
        : intake(context, peers, desk, uploads, settings,
                 [this](const ResearcherRequest& request, LoadedJob loaded,
                        const plan::TilePlan& tiles) {
                     created.push_back(CreatedJob{request, std::move(loaded), tiles});
                 }) {
        researcher = node.store.addResearcher("ada@lab.example", "token-hash-ada").value_or(-1);
        link = connect(kPeer, researcher);
    }
    ResearcherDesk desk{context, peers};
    StagedUploads uploads{context, peers, desk};
    std::vector<CreatedJob> created;
    MatmulIntake intake;
    std::int64_t researcher = 0;
    std::shared_ptr<FakePeerLink> link;
    std::int64_t nextId = 100;

    std::shared_ptr<FakePeerLink> connect(std::uint64_t peer, std::int64_t who) {
        auto added = std::make_shared<FakePeerLink>();
        Peer& entry = peers.add(peer, added, PeerRole::Researcher);
        entry.ready = true;
        entry.researcherId = who;
        return added;
    }
    ResearcherRequest request(std::uint64_t peer = kPeer) {
        return ResearcherRequest{peer, peers.find(peer)->researcherId, nextId++};
    }
    std::size_t filesIn(const char* folder) const {
        std::size_t count = 0;
        for ([[maybe_unused]] const auto& entry :
             std::filesystem::directory_iterator(node.blobs.root() / folder))
            ++count;
        return count;
    }
    // What the node holds: "J jobs, T tasks, B blobs, R results".
    QString stored() {
        return QString::fromStdString(
            std::to_string(queryInt(node.store, "SELECT count(*) FROM jobs")) + " jobs, " +
            std::to_string(queryInt(node.store, "SELECT count(*) FROM tasks")) + " tasks, " +
            std::to_string(filesIn("blobs")) + " blobs, " + std::to_string(filesIn("results")) +
            " results");
    }
};

net::Message wholeSubmit(std::int64_t id, const core::Tensor& a, const core::Tensor& b,
                         std::optional<net::MatrixShape> tile = std::nullopt, bool stream = false) {
    return net::toMessage(net::SubmitMatmul{id,
                                            tile,
                                            std::make_shared<const core::Tensor>(a),
                                            std::make_shared<const core::Tensor>(b),
                                            {},
                                            stream});
}

net::Message stagedSubmit(std::int64_t id, const std::string& a, const std::string& b,
                          std::optional<net::MatrixShape> tile = std::nullopt) {
    return net::toMessage(net::SubmitMatmul{id, tile, nullptr, nullptr, {a, b}, false});
}

// Submits and runs the node until it answers: the job handed to `created`, or null when refused.
const CreatedJob* submit(Rig& rig, const FakePeerLink& link, ResearcherRequest request,
                         net::Message message) {
    const std::size_t before = rig.created.size();
    rig.intake.submit(request, std::move(message));
    if (!rig.node.waitUntil([&] {
            return rig.created.size() > before || !replyTo(link, request.requestId).type().empty();
        }))
        return nullptr;
    if (rig.created.size() > before && rig.created.back().request.requestId == request.requestId)
        return &rig.created.back();
    return nullptr;
}

// Stages `block` as rows 0… of a `rows`-row upload on `link`'s connection: the upload's id.
std::string stage(Rig& rig, const FakePeerLink& link, std::uint64_t peer, const core::Tensor& block,
                  std::int64_t rows) {
    const auto begin = rig.request(peer);
    rig.uploads.begin(begin, net::Upload{begin.requestId, block.dtype(), rows, block.shape()[1]});
    const net::Message ready = replyTo(link, begin.requestId);
    if (ready.type() != "upload_ready")
        return {};
    std::string id(ready.control.at("upload").as_string());
    const auto send = rig.request(peer);
    rig.uploads.receiveRows(
        send, net::UploadRows{send.requestId, id, 0, std::make_shared<const core::Tensor>(block)});
    if (!rig.node.waitUntil([&] { return replyTo(link, send.requestId).type() == "rows_stored"; }))
        return {};
    return id;
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

// The job's row: "researcher|kind|dtype|m|k|n|tile rows|tile cols|A|B|state|created_at".
QString jobRow(NodeStore& store, const std::string& job) {
    auto query = store.database().prepare(
        "SELECT researcher_id, kind, dtype, m, k, n, tile_rows, tile_cols, a_blob, b_blob, state, "
        "created_at FROM jobs WHERE id = ?");
    query.bind(1, std::string_view(job));
    if (!query.step().value_or(false))
        return QString("no job");
    std::ostringstream row; // (a stream: GCC 12 -O3 warns falsely on short string concatenations)
    row << query.columnInt(0);
    for (int column = 1; column < 11; ++column)
        row << '|' << query.columnText(column);
    row << '|' << std::to_string(query.columnDouble(11));
    return QString::fromStdString(row.str());
}

// The job's tasks in id order: "row0,col0,rows,cols state; …".
QString taskRows(NodeStore& store, const std::string& job) {
    auto query = store.database().prepare(
        "SELECT row0, col0, rows, cols, state FROM tasks WHERE job_id = ? ORDER BY id");
    query.bind(1, std::string_view(job));
    std::ostringstream rows;
    for (bool first = true; query.step().value_or(false); first = false)
        rows << (first ? "" : "; ") << query.columnInt(0) << ',' << query.columnInt(1) << ','
             << query.columnInt(2) << ',' << query.columnInt(3) << ' ' << query.columnText(4);
    return QString::fromStdString(rows.str());
}

core::Tensor zeros(core::DType dtype, core::Shape shape) {
    core::Tensor tensor = core::Tensor::allocate(dtype, std::move(shape)).value();
    std::memset(tensor.bytes().data(), 0, tensor.byteSize());
    return tensor;
}

const QString kNothing = "0 jobs, 0 tasks, 0 blobs, 0 results";

} // namespace

class TestMatmulIntake : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aWholeSubmissionWritesItsJobTasksAndBlobs();
    void theRequestedTileIsClampedToTheProduct();
    void shapeAndDtypeRulesRefuseWithNothingStored();
    void aNonFiniteInputIsRefusedWithNothingStored();
    void tileLimitsRefuseAndDeleteOnlyUnsharedBlobs();
    void stagedInputsBecomeTheJobsBlobs();
    void stagedInputsFollowTheSameRules();
    void aStreamIsGrantedOnlyForTilesOfAtLeastAMebibyte();
};

void TestMatmulIntake::aWholeSubmissionWritesItsJobTasksAndBlobs() {
    Rig rig;
    const core::Tensor a = goblin::testing::randomTensor(core::DType::F32, {5, 3}, 11);
    const core::Tensor b = goblin::testing::randomTensor(core::DType::F32, {3, 4}, 12);
    const auto request = rig.request();
    const CreatedJob* job = submit(rig, *rig.link, request,
                                   wholeSubmit(request.requestId, a, b, net::MatrixShape{2, 3}));
    QVERIFY2(job, errorOf(*rig.link, request.requestId).second.c_str());
    QCOMPARE(rig.created.size(), std::size_t{1});
    QCOMPARE(job->request.peer, kPeer);
    QCOMPARE(job->request.researcherId, rig.researcher);
    const std::string id = job->loaded.job.record.id;
    QVERIFY(id.starts_with("j-"));
    const std::string aDigest = net::sha256Hex(a.bytes());
    const std::string bDigest = net::sha256Hex(b.bytes());
    QCOMPARE(jobRow(rig.node.store, id),
             QString::fromStdString(std::to_string(rig.researcher) + "|matmul|f32|5|3|4|2|3|" +
                                    aDigest + "|" + bDigest + "|running|" +
                                    std::to_string(rig.node.now)));
    QCOMPARE(taskRows(rig.node.store, id),
             QString("0,0,2,3 queued; 0,3,2,1 queued; 2,0,2,3 queued; 2,3,2,1 queued; "
                     "4,0,1,3 queued; 4,3,1,1 queued"));
    QCOMPARE(job->loaded.tasks.size(), std::size_t{6});
    QCOMPARE(job->plan.tiles.size(), std::size_t{6});
    QCOMPARE(rig.stored(), QString("1 jobs, 6 tasks, 2 blobs, 1 results"));
    QVERIFY(blobHolds(rig.node.blobs, aDigest, a));
    QVERIFY(blobHolds(rig.node.blobs, bDigest, b));
    QCOMPARE(job->loaded.job.streamTo, std::uint64_t{0});
    QCOMPARE(rig.link->count("error"), std::size_t{0});
}

void TestMatmulIntake::theRequestedTileIsClampedToTheProduct() {
    Rig rig;
    const core::Tensor a = goblin::testing::randomTensor(core::DType::F64, {6, 5}, 21);
    const core::Tensor b = goblin::testing::randomTensor(core::DType::F64, {5, 4}, 22);
    const auto request = rig.request();
    const CreatedJob* job = submit(rig, *rig.link, request,
                                   wholeSubmit(request.requestId, a, b, net::MatrixShape{100, 3}));
    QVERIFY(job);
    QCOMPARE(job->plan.tileRows, std::int64_t{6});
    QCOMPARE(job->plan.tileCols, std::int64_t{3});
    QCOMPARE(taskRows(rig.node.store, job->loaded.job.record.id),
             QString("0,0,6,3 queued; 0,3,6,1 queued"));
    // A tile of [0, 2] is refused by the message's parser, before anything is stored.
    Rig zero;
    const auto refused = zero.request();
    QVERIFY(!submit(zero, *zero.link, refused,
                    wholeSubmit(refused.requestId, a, b, net::MatrixShape{0, 2})));
    QCOMPARE(errorOf(*zero.link, refused.requestId),
             std::pair(std::string("invalid_message"),
                       std::string("'tile' must be [rows, cols] with both >= 1")));
    QCOMPARE(zero.stored(), kNothing);
}

void TestMatmulIntake::shapeAndDtypeRulesRefuseWithNothingStored() {
    using core::DType;
    struct Case {
        core::Tensor a, b;
        std::string code, message;
    };
    const auto random = [](DType dtype, core::Shape shape) {
        return goblin::testing::randomTensor(dtype, std::move(shape), 31);
    };
    const std::string empty = "empty matrices are refused";
    const std::string twoD = "A and B must be 2-D matrices";
    const std::vector<Case> cases{
        {random(DType::F32, {2, 3}), random(DType::F32, {4, 2}), "shape_mismatch",
         "inner sizes differ: A is 2x3, B is 4x2"},
        {random(DType::F32, {2, 3}), random(DType::F64, {3, 2}), "unsupported_dtype",
         "matmul takes A and B both f32 or both f64, got f32 and f64"},
        {zeros(DType::I32, {2, 3}), zeros(DType::I32, {3, 2}), "unsupported_dtype",
         "matmul takes A and B both f32 or both f64, got i32 and i32"},
        {random(DType::F64, {6}), random(DType::F64, {3, 2}), "shape_mismatch", twoD},
        {random(DType::F64, {1, 2, 3}), random(DType::F64, {3, 2}), "shape_mismatch", twoD},
        {random(DType::F64, {0, 3}), random(DType::F64, {3, 2}), "shape_mismatch", empty},
        {random(DType::F64, {2, 0}), random(DType::F64, {0, 2}), "shape_mismatch", empty},
        {random(DType::F64, {2, 3}), random(DType::F64, {3, 0}), "shape_mismatch", empty},
    };
    for (const Case& refused : cases) {
        Rig rig;
        const auto request = rig.request();
        QVERIFY(
            !submit(rig, *rig.link, request, wholeSubmit(request.requestId, refused.a, refused.b)));
        QCOMPARE(errorOf(*rig.link, request.requestId), std::pair(refused.code, refused.message));
        QCOMPARE(rig.stored(), kNothing);
    }
}

void TestMatmulIntake::aNonFiniteInputIsRefusedWithNothingStored() {
    for (const bool inA : {true, false}) {
        Rig rig;
        core::Tensor a = goblin::testing::randomTensor(core::DType::F64, {3, 4}, 41);
        core::Tensor b = goblin::testing::randomTensor(core::DType::F64, {4, 2}, 42);
        if (inA)
            a.values<double>()[1 * 4 + 2] = std::numeric_limits<double>::quiet_NaN(); // (1, 2)
        else
            b.values<double>()[2 * 2 + 1] = -std::numeric_limits<double>::infinity(); // (2, 1)
        const auto request = rig.request();
        QVERIFY(!submit(rig, *rig.link, request, wholeSubmit(request.requestId, a, b)));
        QCOMPARE(errorOf(*rig.link, request.requestId),
                 std::pair(std::string("invalid_input"),
                           std::string(inA ? "A holds NaN or Inf at (1, 2)"
                                           : "B holds NaN or Inf at (2, 1)") +
                               "; verification needs finite inputs"));
        // The finite input, stored by the other worker meanwhile, was deleted too.
        QCOMPARE(rig.stored(), kNothing);
    }
}

void TestMatmulIntake::tileLimitsRefuseAndDeleteOnlyUnsharedBlobs() {
    MatmulSettings settings;
    settings.limits.maxTiles = 4;
    Rig rig(settings);
    const core::Tensor a = goblin::testing::randomTensor(core::DType::F64, {6, 3}, 51);
    const core::Tensor b1 = goblin::testing::randomTensor(core::DType::F64, {3, 4}, 52);
    const core::Tensor b2 = goblin::testing::randomTensor(core::DType::F64, {3, 4}, 53);
    const auto first = rig.request();
    const CreatedJob* live = submit(rig, *rig.link, first, wholeSubmit(first.requestId, a, b1));
    QVERIFY(live);
    const std::string liveId = live->loaded.job.record.id;
    const std::string aDigest = net::sha256Hex(a.bytes());
    const std::string b2Digest = net::sha256Hex(b2.bytes());
    const std::pair<std::string, std::string> overLimit{
        "limit_exceeded", "the job would have 24 tiles; the limit is 4"};
    // 1×1 tiles of a 6×4 product are 24: refused; A is the live job's, so only B2 goes.
    const auto second = rig.request();
    QVERIFY(!submit(rig, *rig.link, second,
                    wholeSubmit(second.requestId, a, b2, net::MatrixShape{1, 1})));
    QCOMPARE(errorOf(*rig.link, second.requestId), overLimit);
    QVERIFY(rig.node.blobs.has(aDigest));
    QVERIFY(!rig.node.blobs.has(b2Digest));
    QCOMPARE(rig.stored(), QString("1 jobs, 1 tasks, 2 blobs, 1 results"));
    // Once the job is released, A is nobody's: the same refusal deletes it too.
    QVERIFY(rig.node.store.setJobState(liveId, JobState::Released, rig.node.now).has_value());
    const auto third = rig.request();
    QVERIFY(!submit(rig, *rig.link, third,
                    wholeSubmit(third.requestId, a, b2, net::MatrixShape{1, 1})));
    QCOMPARE(errorOf(*rig.link, third.requestId), overLimit);
    QVERIFY(!rig.node.blobs.has(aDigest));
    QVERIFY(!rig.node.blobs.has(b2Digest));
    QVERIFY(rig.node.blobs.has(net::sha256Hex(b1.bytes())));
    // An inner size whose 1×1 tile is over the tensor limit (9 f64 values > 64 bytes).
    MatmulSettings small;
    small.limits.maxTensorBytes = 64;
    Rig tight(small);
    const auto request = tight.request();
    QVERIFY(!submit(tight, *tight.link, request,
                    wholeSubmit(request.requestId,
                                goblin::testing::randomTensor(core::DType::F64, {2, 9}, 54),
                                goblin::testing::randomTensor(core::DType::F64, {9, 2}, 55))));
    QCOMPARE(errorOf(*tight.link, request.requestId),
             std::pair(std::string("limit_exceeded"),
                       std::string("one tile's inputs are over the tensor limit even at 1×1 "
                                   "tiles (inner size 9 is too large)")));
    QCOMPARE(tight.stored(), kNothing);
}

void TestMatmulIntake::stagedInputsBecomeTheJobsBlobs() {
    Rig rig;
    const core::Tensor a = goblin::testing::randomTensor(core::DType::F64, {5, 3}, 61);
    const core::Tensor b = goblin::testing::randomTensor(core::DType::F64, {3, 4}, 62);
    const std::string idA = stage(rig, *rig.link, kPeer, a, 5);
    const std::string idB = stage(rig, *rig.link, kPeer, b, 3);
    QVERIFY(!idA.empty() && !idB.empty());
    QCOMPARE(rig.filesIn("uploads"), std::size_t{2});
    const auto request = rig.request();
    const CreatedJob* job = submit(
        rig, *rig.link, request, stagedSubmit(request.requestId, idA, idB, net::MatrixShape{2, 2}));
    QVERIFY2(job, errorOf(*rig.link, request.requestId).second.c_str());
    const std::string aDigest = net::sha256Hex(a.bytes());
    const std::string bDigest = net::sha256Hex(b.bytes());
    QCOMPARE(jobRow(rig.node.store, job->loaded.job.record.id),
             QString::fromStdString(std::to_string(rig.researcher) + "|matmul|f64|5|3|4|2|2|" +
                                    aDigest + "|" + bDigest + "|running|" +
                                    std::to_string(rig.node.now)));
    QCOMPARE(job->loaded.tasks.size(), std::size_t{6});
    QVERIFY(blobHolds(rig.node.blobs, aDigest, a));
    QVERIFY(blobHolds(rig.node.blobs, bDigest, b));
    // The uploads' files became the blobs: nothing is staged any more.
    QCOMPARE(rig.filesIn("uploads"), std::size_t{0});
    QCOMPARE(rig.stored(), QString("1 jobs, 6 tasks, 2 blobs, 1 results"));
}

void TestMatmulIntake::stagedInputsFollowTheSameRules() {
    using core::DType;
    struct Case {
        core::Tensor a, b;
        std::string code, message;
    };
    const std::vector<Case> cases{
        {goblin::testing::randomTensor(DType::F32, {4, 3}, 71),
         goblin::testing::randomTensor(DType::F32, {2, 2}, 72), "shape_mismatch",
         "inner sizes differ: A is 4x3, B is 2x2"},
        {goblin::testing::randomTensor(DType::F32, {2, 3}, 73),
         goblin::testing::randomTensor(DType::F64, {3, 2}, 74), "unsupported_dtype",
         "matmul takes A and B both f32 or both f64, got f32 and f64"},
    };
    for (const Case& refused : cases) {
        Rig rig;
        const std::string idA = stage(rig, *rig.link, kPeer, refused.a, refused.a.shape()[0]);
        const std::string idB = stage(rig, *rig.link, kPeer, refused.b, refused.b.shape()[0]);
        const auto request = rig.request();
        QVERIFY(!submit(rig, *rig.link, request, stagedSubmit(request.requestId, idA, idB)));
        QCOMPARE(errorOf(*rig.link, request.requestId), std::pair(refused.code, refused.message));
        // Taken, then refused: the blobs they became are deleted.
        QCOMPARE(rig.filesIn("uploads"), std::size_t{0});
        QCOMPARE(rig.stored(), kNothing);
    }
    // An incomplete upload refuses the submit and leaves both uploads staged.
    Rig rig;
    const core::Tensor a = goblin::testing::randomTensor(DType::F32, {2, 3}, 75);
    const std::string idA = stage(rig, *rig.link, kPeer, a, 2);
    const std::string idB =
        stage(rig, *rig.link, kPeer, goblin::testing::randomTensor(DType::F32, {2, 2}, 76), 3);
    const auto incomplete = rig.request();
    QVERIFY(!submit(rig, *rig.link, incomplete, stagedSubmit(incomplete.requestId, idA, idB)));
    QCOMPARE(errorOf(*rig.link, incomplete.requestId),
             std::pair(std::string("invalid_input"), "upload " + idB + " has 2 of its 3 rows"));
    QCOMPARE(rig.filesIn("uploads"), std::size_t{2});
    QCOMPARE(rig.stored(), kNothing);
    // Another researcher naming them finds no such upload, and takes nothing.
    const std::int64_t other =
        rig.node.store.addResearcher("bob@lab.example", "token-hash-bob").value_or(-1);
    auto stranger = rig.connect(2, other);
    const auto foreign = rig.request(2);
    QVERIFY(!submit(rig, *stranger, foreign, stagedSubmit(foreign.requestId, idA, idB)));
    QCOMPARE(errorOf(*stranger, foreign.requestId),
             std::pair(std::string("not_found"), "no upload " + idA));
    QCOMPARE(rig.filesIn("uploads"), std::size_t{2});
    QCOMPARE(rig.stored(), kNothing);
}

void TestMatmulIntake::aStreamIsGrantedOnlyForTilesOfAtLeastAMebibyte() {
    using core::DType;
    struct Case {
        const char* what;
        DType dtype;
        std::int64_t m, n;
        net::MatrixShape tile;
        bool stream, granted;
    };
    // A whole product travels at most maxTensorBytes (1 MiB here).
    const std::vector<Case> cases{
        {"f64 tiles of 1 MiB", DType::F64, 256, 512, {256, 512}, true, true},
        {"f32 tiles of 1 MiB", DType::F32, 512, 512, {512, 512}, true, true},
        {"f64 tiles of 512 KiB", DType::F64, 256, 512, {256, 256}, true, false},
        {"f32 tiles of a column less", DType::F32, 512, 512, {512, 511}, true, false},
        {"not asked for", DType::F64, 256, 512, {256, 512}, false, false},
        {"product not whole", DType::F64, 256, 1024, {256, 512}, true, false},
    };
    MatmulSettings settings;
    settings.limits.maxTensorBytes = std::size_t{1} << 20;
    for (const Case& wanted : cases) {
        Rig rig(settings);
        const auto request = rig.request();
        const CreatedJob* job =
            submit(rig, *rig.link, request,
                   wholeSubmit(request.requestId,
                               goblin::testing::randomTensor(wanted.dtype, {wanted.m, 1}, 81),
                               goblin::testing::randomTensor(wanted.dtype, {1, wanted.n}, 82),
                               wanted.tile, wanted.stream));
        QVERIFY2(job, wanted.what);
        QVERIFY2(job->loaded.job.streamTo == (wanted.granted ? kPeer : 0), wanted.what);
    }
}

QTEST_APPLESS_MAIN(TestMatmulIntake)
#include "test_matmul_intake.moc"
