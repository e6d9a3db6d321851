// Tests of the matmul kind's decider (tile_verifier.hpp) on a job over real A and B blobs in a
// temporary directory: makeTileCheck views the task's rows of A and columns of B; an honest tile
// (summed in float64, rounded once) is accepted and merged at its place in the result file and
// nowhere else; a tile with one element far off, lazy zeros, a misshapen or mistyped tile and
// NaN/Inf are rejected with a reason and merge nothing; a grey-zone tile is decided by the exact
// check; an honest tile the node cannot write is not accepted; the verdict's fields are filled;
// isTinyTile draws its line at kTinyTileElements.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "goblin/core/random_source.hpp"
#include "goblin/verify/matmul_check.hpp"
#include "kinds/matmul/tile_verifier.hpp"
#include "support/matmul_reference.hpp"
#include "support/random_tensors.hpp"

using namespace goblin;
using namespace goblin::labnode;

namespace {

constexpr std::int64_t kM = 24, kK = 64, kN = 40;
// An interior tile (its rows and columns start inside A and B, so the views' strides matter) of
// one column block: 12 columns, under the default block width K/4.
constexpr std::int64_t kRow0 = 8, kCol0 = 12, kRows = 8, kCols = 12;
constexpr std::uint64_t kSeedA = 21, kSeedB = 22, kSeedResult = 23, kSeedProbes = 24;

double unitOf(core::DType dtype) {
    return dtype == core::DType::F32 ? 0x1p-24 : 0x1p-53;
}

void setElement(core::Tensor& t, std::int64_t index, double value) {
    const auto at = static_cast<std::size_t>(index);
    if (t.dtype() == core::DType::F32)
        t.values<float>()[at] = static_cast<float>(value);
    else
        t.values<double>()[at] = value;
}

// (A·B)_ij and (|A||B|)_ij of whole A (m×k) and B (k×n), summed in long double.
struct ProductElement {
    double exact = 0.0, magnitude = 0.0;
};

ProductElement productAt(const core::Tensor& a, const core::Tensor& b, std::int64_t i,
                         std::int64_t j) {
    const std::int64_t k = a.shape()[1], n = b.shape()[1];
    long double sum = 0.0L, magnitude = 0.0L;
    for (std::int64_t p = 0; p < k; ++p) {
        const long double x = goblin::testing::elementAt(a, i * k + p);
        const long double y = goblin::testing::elementAt(b, p * n + j);
        sum += x * y;
        magnitude += std::fabs(x) * std::fabs(y);
    }
    return {static_cast<double>(sum), static_cast<double>(magnitude)};
}

// The element's own bound γ_K·(|A||B|)_ij.
double ownBound(const core::Tensor& a, const core::Tensor& b, std::int64_t i, std::int64_t j) {
    return goblin::testing::gammaOf(a.shape()[1], unitOf(a.dtype())) *
           productAt(a, b, i, j).magnitude;
}

// The task's tile of A·B as an honest volunteer returns it: each element summed in float64 in
// index order and rounded once to the dtype.
core::Tensor honestTile(const core::Tensor& a, const core::Tensor& b, const TileTask& task) {
    const std::int64_t k = a.shape()[1], n = b.shape()[1];
    core::Tensor tile = core::Tensor::allocate(a.dtype(), {task.rows, task.cols}).value();
    for (std::int64_t i = 0; i < task.rows; ++i)
        for (std::int64_t j = 0; j < task.cols; ++j) {
            double sum = 0.0;
            for (std::int64_t p = 0; p < k; ++p)
                sum += goblin::testing::elementAt(a, (task.row0 + i) * k + p) *
                       goblin::testing::elementAt(b, p * n + task.col0 + j);
            setElement(tile, i * task.cols + j, sum);
        }
    return tile;
}

// A fresh tensor of `before` (a whole result) with `tile` written at (row0, col0).
core::Tensor withTile(const core::Tensor& before, const core::Tensor& tile, std::int64_t row0,
                      std::int64_t col0) {
    core::Tensor after = core::copyToTensor(core::viewOf(before)).value();
    const auto item = core::itemSize(before.dtype());
    const std::int64_t cols = before.shape()[1];
    const auto rowBytes = static_cast<std::size_t>(tile.shape()[1]) * item;
    for (std::int64_t i = 0; i < tile.shape()[0]; ++i)
        std::memcpy(after.bytes().data() +
                        static_cast<std::size_t>((row0 + i) * cols + col0) * item,
                    tile.bytes().data() + static_cast<std::size_t>(i) * rowBytes, rowBytes);
    return after;
}

// Empty when the two tensors hold the same bits; else the first element that differs.
std::string firstDifference(const core::Tensor& got, const core::Tensor& want) {
    if (got.dtype() != want.dtype() || got.shape() != want.shape())
        return "the tensors differ in dtype or shape";
    const auto item = core::itemSize(got.dtype());
    for (std::int64_t e = 0; e < got.elementCount(); ++e) {
        const auto at = static_cast<std::size_t>(e) * item;
        if (std::memcmp(got.bytes().data() + at, want.bytes().data() + at, item) == 0)
            continue;
        const std::int64_t cols = got.shape().back();
        return "element (" + std::to_string(e / cols) + ", " + std::to_string(e % cols) +
               "): got " + std::to_string(goblin::testing::elementAt(got, e)) + ", want " +
               std::to_string(goblin::testing::elementAt(want, e));
    }
    return {};
}

TileTask tileTask(const std::string& jobId, std::int64_t row0, std::int64_t col0, std::int64_t rows,
                  std::int64_t cols) {
    TileTask task;
    task.id = 1;
    task.jobId = jobId;
    task.row0 = row0;
    task.col0 = col0;
    task.rows = rows;
    task.cols = cols;
    return task;
}

// A running matmul job over real blobs in a temporary directory, made as job_loader makes one: A
// and B stored under their digests and mapped, the result file created at its full size; then
// filled with random values, so that a merge of any tile (zeros included) shows in it.
class TileRig {
    // First, so the files and the probes' random source outlive the job that uses them.
    QTemporaryDir m_dir;
    BlobStore m_blobs;
    core::SeededRandom m_random{kSeedProbes};
    std::string m_setupError;

public:
    explicit TileRig(core::DType dtype, std::int64_t m = kM, std::int64_t k = kK,
                     std::int64_t n = kN, verify::MatmulCheckOptions options = {})
        : m_blobs(m_dir.filePath(QStringLiteral("blobs")).toStdString()) {
        a = goblin::testing::randomTensor(dtype, {m, k}, kSeedA);
        b = goblin::testing::randomTensor(dtype, {k, n}, kSeedB);
        m_setupError = makeJob(options);
    }

    const std::string& setupError() const { return m_setupError; }
    const BlobStore& blobs() const { return m_blobs; }

    // The whole result file as it is now.
    core::Tensor result() const {
        auto read =
            m_blobs.readResult(job.record.id, job.record.dtype, {job.record.m, job.record.n});
        return read ? std::move(*read) : core::Tensor{};
    }

    // The verdict on `tile` as the task's result (the fields preset to values no check gives,
    // and the method as MatmulJobs presets it), and the result file before and after it.
    struct Outcome {
        VerdictRecord verdict;
        core::Tensor before, after;
    };
    Outcome judge(const TileTask& task, const core::Tensor& tile) const {
        Outcome outcome;
        outcome.verdict.method = "freivalds-f64";
        outcome.verdict.ratio = outcome.verdict.threshold = -1.0;
        outcome.verdict.residual = outcome.verdict.bound = -1.0;
        outcome.verdict.verifySeconds = -1.0;
        outcome.verdict.reason = "not verified";
        outcome.before = result();
        verifyAndMerge(makeTileCheck(job, task), tile, m_blobs, outcome.verdict);
        outcome.after = result();
        return outcome;
    }

    core::Tensor a, b;
    RunningJob job;

private:
    std::string makeJob(const verify::MatmulCheckOptions& options) {
        if (!m_dir.isValid())
            return "no temporary directory";
        JobRecord record;
        record.id = "job-tile";
        record.dtype = a.dtype();
        record.m = a.shape()[0];
        record.k = a.shape()[1];
        record.n = b.shape()[1];
        auto aDigest = m_blobs.put(a);
        auto bDigest = m_blobs.put(b);
        if (!aDigest || !bDigest)
            return "cannot store A or B";
        record.aBlob = *aDigest;
        record.bBlob = *bDigest;
        auto aMapped = m_blobs.map(record.aBlob);
        auto bMapped = m_blobs.map(record.bBlob);
        if (!aMapped || !bMapped)
            return "cannot map A or B";
        const auto bytes =
            static_cast<std::size_t>(record.m * record.n) * core::itemSize(a.dtype());
        if (auto ok = m_blobs.createResult(record.id, bytes); !ok)
            return ok.error().message;
        const core::Tensor filler =
            goblin::testing::randomTensor(a.dtype(), {record.m, record.n}, kSeedResult);
        if (auto ok = m_blobs.writeTile(record.id, filler, 0, 0, record.n); !ok)
            return ok.error().message;
        job.record = std::move(record);
        job.a = *aMapped;
        job.b = *bMapped;
        job.probes = std::make_shared<ColumnProbeCache>(m_random, options);
        if (!firstDifference(result(), filler).empty())
            return "the result file does not hold what was written into it";
        return {};
    }
};

TileTask interiorTask() {
    return tileTask("job-tile", kRow0, kCol0, kRows, kCols);
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

Q_DECLARE_METATYPE(goblin::core::DType)

class TestTileVerifier : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tileCheckViewsTheTaskRowsOfAAndColumnsOfB();
    void honestTileIsAcceptedAndMergedAtItsPlaceOnly_data();
    void honestTileIsAcceptedAndMergedAtItsPlaceOnly();
    void acceptedVerdictHasItsFieldsFilled();
    void oneElementFarOffIsRejectedAndNothingMerged_data();
    void oneElementFarOffIsRejectedAndNothingMerged();
    void lazyZerosAreRejected();
    void misshapenTileIsRejectedWithAReason();
    void mistypedTileIsRejectedWithAReason();
    void nonFiniteElementsAreRejected();
    void greyZoneTileIsDecidedByTheExactCheck();
    void honestTileTheNodeCannotWriteIsNotAccepted();
    void tinyTilesAreThoseWithinKTinyTileElements();
};

void TestTileVerifier::tileCheckViewsTheTaskRowsOfAAndColumnsOfB() {
    const TileRig rig(core::DType::F32);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileCheck check = makeTileCheck(rig.job, interiorTask());
    QCOMPARE(check.jobId, rig.job.record.id);
    QCOMPARE(check.row0, kRow0);
    QCOMPARE(check.col0, kCol0);
    QCOMPARE(check.resultCols, kN);
    QVERIFY(check.keepA == rig.job.a && check.keepB == rig.job.b);
    QVERIFY(check.probes == rig.job.probes);
    QCOMPARE(check.a.rows, kRows);
    QCOMPARE(check.a.cols, kK);
    QCOMPARE(check.b.rows, kK);
    QCOMPARE(check.b.cols, kCols);
    QVERIFY(check.a.dtype == core::DType::F32 && check.b.dtype == core::DType::F32);
    // Every element the views show is the one of the original A and B at that place.
    for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t p = 0; p < kK; ++p)
            QCOMPARE(check.a.row<float>(i)[p],
                     rig.a.values<float>()[static_cast<std::size_t>((kRow0 + i) * kK + p)]);
    for (std::int64_t p = 0; p < kK; ++p)
        for (std::int64_t j = 0; j < kCols; ++j)
            QCOMPARE(check.b.row<float>(p)[j],
                     rig.b.values<float>()[static_cast<std::size_t>(p * kN + kCol0 + j)]);
}

void TestTileVerifier::honestTileIsAcceptedAndMergedAtItsPlaceOnly_data() {
    QTest::addColumn<core::DType>("dtype");
    QTest::newRow("f32") << core::DType::F32;
    QTest::newRow("f64") << core::DType::F64;
}

void TestTileVerifier::honestTileIsAcceptedAndMergedAtItsPlaceOnly() {
    QFETCH(core::DType, dtype);
    const TileRig rig(dtype);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    const core::Tensor tile = honestTile(rig.a, rig.b, task);
    const auto outcome = rig.judge(task, tile);
    QVERIFY2(outcome.verdict.accepted, outcome.verdict.reason.c_str());
    QVERIFY(outcome.verdict.reason.empty());
    // The tile's values at (row0, col0), bit for bit; every other element as it was.
    const std::string difference =
        firstDifference(outcome.after, withTile(outcome.before, tile, kRow0, kCol0));
    QVERIFY2(difference.empty(), difference.c_str());
    QVERIFY(!firstDifference(outcome.after, outcome.before).empty());
}

void TestTileVerifier::acceptedVerdictHasItsFieldsFilled() {
    // An f32 tile rounded once from float64 errs by at most u/2·|C| per element, far under the
    // calibrated threshold of a 12-column block (0.8·K/12 element bounds of u·|A||B|): Freivalds
    // accepts it without escalating.
    const verify::MatmulCheckOptions options;
    const TileRig rig(core::DType::F32, kM, kK, kN, options);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    const auto outcome = rig.judge(task, honestTile(rig.a, rig.b, task));
    const VerdictRecord& verdict = outcome.verdict;
    QVERIFY2(verdict.accepted, verdict.reason.c_str());
    QCOMPARE(verdict.method, std::string("freivalds-f64")); // set only when escalated
    QVERIFY(verdict.reason.empty());
    QCOMPARE(verdict.threshold, options.threshold);
    QVERIFY(std::isfinite(verdict.ratio) && verdict.ratio >= 0.0);
    QVERIFY(verdict.ratio <= verdict.threshold);
    QVERIFY(std::isfinite(verdict.bound) && verdict.bound > 0.0);
    QVERIFY(verdict.residual >= 0.0 && verdict.residual <= verdict.bound);
    QVERIFY(verdict.verifySeconds >= 0.0);
}

void TestTileVerifier::oneElementFarOffIsRejectedAndNothingMerged_data() {
    QTest::addColumn<core::DType>("dtype");
    QTest::newRow("f32") << core::DType::F32;
    QTest::newRow("f64") << core::DType::F64;
}

void TestTileVerifier::oneElementFarOffIsRejectedAndNothingMerged() {
    QFETCH(core::DType, dtype);
    const TileRig rig(dtype);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    core::Tensor tile = honestTile(rig.a, rig.b, task);
    const std::int64_t i = 5, j = 7;
    const double bound = ownBound(rig.a, rig.b, kRow0 + i, kCol0 + j);
    setElement(tile, i * kCols + j,
               goblin::testing::elementAt(tile, i * kCols + j) + 1000.0 * bound);
    const auto outcome = rig.judge(task, tile);
    const VerdictRecord& verdict = outcome.verdict;
    QVERIFY(!verdict.accepted);
    QVERIFY(!verdict.reason.empty() && verdict.reason != "not verified");
    // Whichever stage decided it, the residual broke its sound bound.
    QVERIFY(verdict.residual > verdict.bound);
    QVERIFY(verdict.ratio > verdict.threshold);
    QVERIFY(verdict.verifySeconds >= 0.0);
    const std::string difference = firstDifference(outcome.after, outcome.before);
    QVERIFY2(difference.empty(), difference.c_str());
}

void TestTileVerifier::lazyZerosAreRejected() {
    const TileRig rig(core::DType::F32);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    core::Tensor zeros = core::Tensor::allocate(core::DType::F32, {kRows, kCols}).value();
    std::fill(zeros.values<float>().begin(), zeros.values<float>().end(), 0.0f);
    const auto outcome = rig.judge(task, zeros);
    QVERIFY(!outcome.verdict.accepted);
    QVERIFY(!outcome.verdict.reason.empty() && outcome.verdict.reason != "not verified");
    // The file held random values there: zeros merged would show.
    const std::string difference = firstDifference(outcome.after, outcome.before);
    QVERIFY2(difference.empty(), difference.c_str());
}

void TestTileVerifier::misshapenTileIsRejectedWithAReason() {
    const TileRig rig(core::DType::F32);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    const core::Tensor honest = honestTile(rig.a, rig.b, task);
    // The same values under wrong 2-D shapes, and under shapes that are not 2-D.
    const std::vector<core::Shape> matrices{{kCols, kRows}, {kRows * 2, kCols / 2}};
    const std::vector<core::Shape> others{{kRows * kCols}, {1, kRows, kCols}};
    for (const core::Shape& shape : matrices) {
        const auto outcome = rig.judge(task, honest.withShape(shape));
        QVERIFY(!outcome.verdict.accepted);
        QVERIFY2(contains(outcome.verdict.reason, "shape"), outcome.verdict.reason.c_str());
        QCOMPARE(outcome.verdict.ratio, std::numeric_limits<double>::infinity());
        QVERIFY(firstDifference(outcome.after, outcome.before).empty());
    }
    // Too many rows and too few columns: other element counts.
    const std::vector<core::Shape> sized{{kRows + 1, kCols}, {kRows, kCols - 1}};
    for (const core::Shape& shape : sized) {
        const auto outcome =
            rig.judge(task, goblin::testing::randomTensor(core::DType::F32, shape, kSeedResult));
        QVERIFY(!outcome.verdict.accepted);
        QVERIFY2(contains(outcome.verdict.reason, "shape"), outcome.verdict.reason.c_str());
        QVERIFY(firstDifference(outcome.after, outcome.before).empty());
    }
    for (const core::Shape& shape : others) {
        const auto outcome = rig.judge(task, honest.withShape(shape));
        QVERIFY(!outcome.verdict.accepted);
        QVERIFY2(contains(outcome.verdict.reason, "2-D"), outcome.verdict.reason.c_str());
        QCOMPARE(outcome.verdict.ratio, std::numeric_limits<double>::infinity());
        QVERIFY(firstDifference(outcome.after, outcome.before).empty());
    }
}

void TestTileVerifier::mistypedTileIsRejectedWithAReason() {
    const TileRig rig(core::DType::F32);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    // The honest values in float64, and integers of the right shape.
    core::Tensor wider = core::Tensor::allocate(core::DType::F64, {kRows, kCols}).value();
    const core::Tensor honest = honestTile(rig.a, rig.b, task);
    for (std::int64_t e = 0; e < honest.elementCount(); ++e)
        setElement(wider, e, goblin::testing::elementAt(honest, e));
    core::Tensor integers = core::Tensor::allocate(core::DType::I32, {kRows, kCols}).value();
    std::fill(integers.values<std::int32_t>().begin(), integers.values<std::int32_t>().end(), 1);
    for (const core::Tensor* tile : {&wider, &integers}) {
        const auto outcome = rig.judge(task, *tile);
        QVERIFY(!outcome.verdict.accepted);
        QVERIFY2(contains(outcome.verdict.reason, "dtype"), outcome.verdict.reason.c_str());
        QCOMPARE(outcome.verdict.ratio, std::numeric_limits<double>::infinity());
        QVERIFY(firstDifference(outcome.after, outcome.before).empty());
    }
}

void TestTileVerifier::nonFiniteElementsAreRejected() {
    const TileRig rig(core::DType::F32);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    const std::int64_t i = 3, j = 9;
    const std::string where = "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
    for (const double bad :
         {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity()}) {
        core::Tensor tile = honestTile(rig.a, rig.b, task);
        setElement(tile, i * kCols + j, bad);
        const auto outcome = rig.judge(task, tile);
        QVERIFY(!outcome.verdict.accepted);
        QVERIFY2(contains(outcome.verdict.reason, "non-finite") &&
                     contains(outcome.verdict.reason, where),
                 outcome.verdict.reason.c_str());
        QCOMPARE(outcome.verdict.ratio, std::numeric_limits<double>::infinity());
        QVERIFY(firstDifference(outcome.after, outcome.before).empty());
    }
}

void TestTileVerifier::greyZoneTileIsDecidedByTheExactCheck() {
    // A calibrated threshold of 0 puts every residual of an honest f32 tile (its rounding, far
    // over the check's own float64 error) in the grey zone, under the sound bound: the exact check
    // decides, and its ratio is the true worst element error ÷ its own bound.
    verify::MatmulCheckOptions options;
    options.threshold = 0.0;
    const TileRig rig(core::DType::F32, kM, kK, kN, options);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    const auto ratioAt = [&](const core::Tensor& tile, std::int64_t i, std::int64_t j) {
        const ProductElement product = productAt(rig.a, rig.b, kRow0 + i, kCol0 + j);
        return std::fabs(goblin::testing::elementAt(tile, i * kCols + j) - product.exact) /
               ownBound(rig.a, rig.b, kRow0 + i, kCol0 + j);
    };
    const core::Tensor honest = honestTile(rig.a, rig.b, task);
    double worst = 0.0;
    for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t j = 0; j < kCols; ++j)
            worst = std::max(worst, ratioAt(honest, i, j));
    QVERIFY(worst > 0.0); // the rounding the grey zone needs
    const auto accepted = rig.judge(task, honest);
    QVERIFY2(accepted.verdict.accepted, accepted.verdict.reason.c_str());
    QCOMPARE(accepted.verdict.method, std::string("freivalds-escalated"));
    QVERIFY(std::fabs(accepted.verdict.ratio - worst) <= 1e-6 * (1.0 + worst));
    QVERIFY(accepted.verdict.ratio <= accepted.verdict.threshold);
    QVERIFY(accepted.verdict.residual <= accepted.verdict.bound);
    QVERIFY(
        firstDifference(accepted.after, withTile(accepted.before, honest, kRow0, kCol0)).empty());

    // One element 3× its own bound off: within the block's sound bound (12 element bounds), so
    // still the grey zone, and the exact check rejects it by its exact ratio.
    core::Tensor lying = honestTile(rig.a, rig.b, task);
    const std::int64_t i = 2, j = 4;
    const ProductElement product = productAt(rig.a, rig.b, kRow0 + i, kCol0 + j);
    setElement(lying, i * kCols + j,
               product.exact + 3.0 * ownBound(rig.a, rig.b, kRow0 + i, kCol0 + j));
    const double lie = ratioAt(lying, i, j);
    QVERIFY(lie > 2.5);
    const auto rejected = rig.judge(task, lying);
    QVERIFY(!rejected.verdict.accepted);
    QCOMPARE(rejected.verdict.method, std::string("freivalds-escalated"));
    QVERIFY2(
        contains(rejected.verdict.reason, "(" + std::to_string(i) + ", " + std::to_string(j) + ")"),
        rejected.verdict.reason.c_str());
    QVERIFY(std::fabs(rejected.verdict.ratio - lie) <= 1e-6 * lie);
    QVERIFY(rejected.verdict.residual > rejected.verdict.bound);
    QVERIFY(firstDifference(rejected.after, rejected.before).empty());
}

void TestTileVerifier::honestTileTheNodeCannotWriteIsNotAccepted() {
    const TileRig rig(core::DType::F32);
    QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
    const TileTask task = interiorTask();
    rig.blobs().removeResult(rig.job.record.id);
    VerdictRecord verdict;
    verifyAndMerge(makeTileCheck(rig.job, task), honestTile(rig.a, rig.b, task), rig.blobs(),
                   verdict);
    QVERIFY(!verdict.accepted);
    QVERIFY2(contains(verdict.reason, "could not write"), verdict.reason.c_str());
    // The check itself passed: its measures are those of an accepted tile.
    QVERIFY(verdict.residual <= verdict.bound);
}

void TestTileVerifier::tinyTilesAreThoseWithinKTinyTileElements() {
    // A tile's size is its rows of A plus its columns of B: rows·K + K·cols elements.
    static_assert(kTinyTileElements % kK == 0);
    const std::int64_t rowsPlusCols = kTinyTileElements / kK;
    const std::int64_t rows = rowsPlusCols / 2;
    for (const core::DType dtype : {core::DType::F32, core::DType::F64}) {
        // Counted in elements: the f64 job, twice the bytes, draws the line at the same tile.
        const TileRig rig(dtype, rowsPlusCols, kK, rowsPlusCols);
        QVERIFY2(rig.setupError().empty(), rig.setupError().c_str());
        const auto checkOf = [&](std::int64_t cols) {
            return makeTileCheck(rig.job, tileTask(rig.job.record.id, 1, 1, rows, cols));
        };
        const auto tiny = [&](std::int64_t cols) { return isTinyTile(checkOf(cols)); };
        const std::int64_t atTheLimit = rowsPlusCols - rows;
        const TileCheck limit = checkOf(atTheLimit);
        QCOMPARE(limit.a.rows * limit.a.cols + limit.b.rows * limit.b.cols, kTinyTileElements);
        QVERIFY2(tiny(atTheLimit - 1), "a tile just under kTinyTileElements is tiny");
        QVERIFY2(tiny(atTheLimit), "a tile of exactly kTinyTileElements is tiny");
        QVERIFY2(!tiny(atTheLimit + 1), "a tile just over kTinyTileElements is not tiny");
    }
}

QTEST_APPLESS_MAIN(TestTileVerifier)
#include "test_tile_verifier.moc"
