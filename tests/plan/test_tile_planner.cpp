// Tests of planTiles: exact coverage of C, sizing to volunteers' memory and the limits.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "goblin/plan/tile_planner.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using goblin::core::itemSize;
using goblin::plan::PlanningInput;
using goblin::plan::planTiles;
using goblin::plan::TilePlan;

namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

// Empty when the plan's tiles cover every cell of the m×n result exactly once and respect the
// plan's tile size; otherwise what is wrong.
std::string coverageProblem(const PlanningInput& in, const TilePlan& plan) {
    if (plan.tileRows < 1 || plan.tileCols < 1 || plan.tileRows > in.m || plan.tileCols > in.n)
        return "tile size " + std::to_string(plan.tileRows) + "x" + std::to_string(plan.tileCols) +
               " is outside 1..matrix";
    const auto expected = ceilDiv(in.m, plan.tileRows) * ceilDiv(in.n, plan.tileCols);
    if (static_cast<std::int64_t>(plan.tiles.size()) != expected)
        return "tile count " + std::to_string(plan.tiles.size()) +
               " != " + std::to_string(expected);
    std::vector<int> hits(static_cast<std::size_t>(in.m * in.n), 0);
    for (const auto& tile : plan.tiles) {
        if (tile.rows < 1 || tile.cols < 1 || tile.rows > plan.tileRows ||
            tile.cols > plan.tileCols)
            return "a tile has a bad size";
        if (tile.row0 < 0 || tile.col0 < 0 || tile.row0 + tile.rows > in.m ||
            tile.col0 + tile.cols > in.n)
            return "a tile reaches outside the matrix";
        for (std::int64_t i = tile.row0; i < tile.row0 + tile.rows; ++i) {
            for (std::int64_t j = tile.col0; j < tile.col0 + tile.cols; ++j)
                ++hits[static_cast<std::size_t>(i * in.n + j)];
        }
    }
    const auto wrong = std::find_if(hits.begin(), hits.end(), [](int h) { return h != 1; });
    if (wrong != hits.end())
        return "cell " + std::to_string(wrong - hits.begin()) + " is covered " +
               std::to_string(*wrong) + " times";
    return {};
}

std::int64_t tileBytes(const PlanningInput& in, std::int64_t rows, std::int64_t cols) {
    return (rows * in.k + in.k * cols + rows * cols) *
           static_cast<std::int64_t>(itemSize(in.dtype));
}

std::int64_t largestTensor(const PlanningInput& in, std::int64_t rows, std::int64_t cols) {
    return std::max({rows * in.k, in.k * cols, rows * cols}) *
           static_cast<std::int64_t>(itemSize(in.dtype));
}

} // namespace

class TestTilePlanner : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void coversEveryShapeExactlyOnce();
    void oneByOne();
    void requestedTileWins();
    void requestedTileLargerThanMatrix();
    void requestedTileIsClampedToOne();
    void aboutTwoTilesPerVolunteer();
    void memoryBudgetShrinksTiles();
    void tensorLimitShrinksTiles();
    void tensorLimitError();
    void requestedTileOverTensorLimit();
    void maxTilesError();
    void rejectsEmptyMatrices();
    void frameBudgetBoundsTheNodesCopies();
};

void TestTilePlanner::coversEveryShapeExactlyOnce() {
    const std::vector<std::int64_t> sizes = {1, 2, 3, 7, 13, 31, 64, 97, 128, 251};
    const std::vector<int> volunteers = {0, 1, 2, 3, 7, 50};
    int plans = 0;
    for (std::int64_t m : sizes) {
        for (std::int64_t n : sizes) {
            for (int v : volunteers) {
                PlanningInput in;
                in.m = m;
                in.n = n;
                in.k = 1 + (m * 7 + n) % 41;
                in.volunteers = v;
                auto plan = planTiles(in);
                QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
                const std::string problem = coverageProblem(in, *plan);
                QVERIFY2(problem.empty(), qPrintable(QStringLiteral("%1x%2, %3 volunteers: %4")
                                                         .arg(m)
                                                         .arg(n)
                                                         .arg(v)
                                                         .arg(QString::fromStdString(problem))));
                ++plans;
            }
        }
    }
    // Requested tile sizes, including ones that do not divide the matrix.
    for (std::int64_t m : {1, 5, 17, 100}) {
        for (std::int64_t n : {1, 3, 23, 99}) {
            for (auto tile : std::vector<std::pair<std::int64_t, std::int64_t>>{
                     {1, 1}, {2, 3}, {7, 5}, {16, 16}, {1000, 1}, {1, 1000}}) {
                PlanningInput in;
                in.m = m;
                in.n = n;
                in.k = 9;
                in.requestedTile = tile;
                auto plan = planTiles(in);
                QVERIFY(plan.has_value());
                QCOMPARE(plan->tileRows, std::min(tile.first, m));
                QCOMPARE(plan->tileCols, std::min(tile.second, n));
                QVERIFY2(coverageProblem(in, *plan).empty(), coverageProblem(in, *plan).c_str());
                ++plans;
            }
        }
    }
    QVERIFY(plans > 600);
}

void TestTilePlanner::oneByOne() {
    PlanningInput in;
    in.m = 1;
    in.k = 1;
    in.n = 1;
    in.volunteers = 10;
    auto plan = planTiles(in);
    QVERIFY(plan.has_value());
    QCOMPARE(plan->tiles.size(), std::size_t{1});
    QCOMPARE(plan->tiles[0].row0, std::int64_t{0});
    QCOMPARE(plan->tiles[0].col0, std::int64_t{0});
    QCOMPARE(plan->tiles[0].rows, std::int64_t{1});
    QCOMPARE(plan->tiles[0].cols, std::int64_t{1});
}

void TestTilePlanner::requestedTileWins() {
    PlanningInput in;
    in.m = 100;
    in.k = 10;
    in.n = 70;
    in.volunteers = 1;
    in.requestedTile = std::pair<std::int64_t, std::int64_t>{30, 20};
    auto plan = planTiles(in);
    QVERIFY(plan.has_value());
    QCOMPARE(plan->tileRows, std::int64_t{30});
    QCOMPARE(plan->tileCols, std::int64_t{20});
    QCOMPARE(plan->tiles.size(), std::size_t{4 * 4});
    // The last row and column of tiles hold the remainders.
    QCOMPARE(plan->tiles.back().row0, std::int64_t{90});
    QCOMPARE(plan->tiles.back().rows, std::int64_t{10});
    QCOMPARE(plan->tiles.back().col0, std::int64_t{60});
    QCOMPARE(plan->tiles.back().cols, std::int64_t{10});
    QVERIFY(coverageProblem(in, *plan).empty());
}

void TestTilePlanner::requestedTileLargerThanMatrix() {
    PlanningInput in;
    in.m = 13;
    in.k = 4;
    in.n = 7;
    in.volunteers = 5;
    in.requestedTile = std::pair<std::int64_t, std::int64_t>{1024, 1024};
    auto plan = planTiles(in);
    QVERIFY(plan.has_value());
    QCOMPARE(plan->tileRows, std::int64_t{13});
    QCOMPARE(plan->tileCols, std::int64_t{7});
    QCOMPARE(plan->tiles.size(), std::size_t{1});
    QCOMPARE(plan->tiles[0].rows, std::int64_t{13});
    QCOMPARE(plan->tiles[0].cols, std::int64_t{7});
}

void TestTilePlanner::requestedTileIsClampedToOne() {
    PlanningInput in;
    in.m = 3;
    in.k = 2;
    in.n = 4;
    in.requestedTile = std::pair<std::int64_t, std::int64_t>{0, -5};
    auto plan = planTiles(in);
    QVERIFY(plan.has_value());
    QCOMPARE(plan->tileRows, std::int64_t{1});
    QCOMPARE(plan->tileCols, std::int64_t{1});
    QCOMPARE(plan->tiles.size(), std::size_t{12});
    QVERIFY(coverageProblem(in, *plan).empty());
}

void TestTilePlanner::aboutTwoTilesPerVolunteer() {
    for (int volunteers : {1, 2, 3, 4, 8, 16}) {
        PlanningInput in;
        in.m = 1000;
        in.k = 100;
        in.n = 1000;
        in.volunteers = volunteers;
        auto plan = planTiles(in);
        QVERIFY(plan.has_value());
        const auto tiles = static_cast<int>(plan->tiles.size());
        QVERIFY2(
            tiles >= 2 * volunteers && tiles <= 4 * volunteers,
            qPrintable(QStringLiteral("%1 volunteers got %2 tiles").arg(volunteers).arg(tiles)));
    }
    // No volunteers yet still gives a usable plan.
    PlanningInput none;
    none.m = 50;
    none.k = 5;
    none.n = 50;
    auto plan = planTiles(none);
    QVERIFY(plan.has_value());
    QVERIFY(!plan->tiles.empty());
    QVERIFY(coverageProblem(none, *plan).empty());
}

void TestTilePlanner::memoryBudgetShrinksTiles() {
    PlanningInput in;
    in.m = 2048;
    in.k = 512;
    in.n = 2048;
    in.dtype = DType::F64;
    in.volunteers = 1;
    auto roomy = planTiles(in);
    QVERIFY(roomy.has_value());

    for (std::int64_t memory :
         {std::int64_t{64} << 20, std::int64_t{16} << 20, std::int64_t{4} << 20}) {
        in.smallestVolunteerMemory = memory;
        auto tight = planTiles(in);
        QVERIFY(tight.has_value());
        QVERIFY2(tileBytes(in, tight->tileRows, tight->tileCols) <= memory / 4,
                 qPrintable(QStringLiteral("memory %1: tile %2x%3")
                                .arg(memory)
                                .arg(tight->tileRows)
                                .arg(tight->tileCols)));
        QVERIFY(tight->tileRows * tight->tileCols < roomy->tileRows * roomy->tileCols);
        QVERIFY(tight->tiles.size() > roomy->tiles.size());
        QVERIFY(coverageProblem(in, *tight).empty());
        // Not needlessly small: doubling either side would break the budget (or the matrix).
        const bool rowsCanGrow = tight->tileRows * 2 <= in.m &&
                                 tileBytes(in, tight->tileRows * 2, tight->tileCols) <= memory / 4;
        const bool colsCanGrow = tight->tileCols * 2 <= in.n &&
                                 tileBytes(in, tight->tileRows, tight->tileCols * 2) <= memory / 4;
        QVERIFY(!(rowsCanGrow && colsCanGrow));
    }
}

void TestTilePlanner::tensorLimitShrinksTiles() {
    PlanningInput in;
    in.m = 300;
    in.k = 100;
    in.n = 300;
    in.dtype = DType::F32;
    in.volunteers = 1;
    in.maxTensorBytes = 100 * 40 * 4; // an A block of 40 rows
    auto plan = planTiles(in);
    QVERIFY2(plan.has_value(), plan ? "" : plan.error().message.c_str());
    QVERIFY(largestTensor(in, plan->tileRows, plan->tileCols) <= in.maxTensorBytes);
    QVERIFY(plan->tileRows <= 40 && plan->tileCols <= 40);
    QVERIFY(coverageProblem(in, *plan).empty());
}

void TestTilePlanner::tensorLimitError() {
    PlanningInput in;
    in.m = 4;
    in.k = 1000;
    in.n = 4;
    in.dtype = DType::F64;
    in.maxTensorBytes = 4000; // a single row of A (8000 bytes) is already too big
    auto plan = planTiles(in);
    QVERIFY(!plan.has_value());
    QCOMPARE(plan.error().code, ErrorCode::LimitExceeded);
    // At 8000 bytes 1×1 tiles fit.
    in.maxTensorBytes = 8000;
    auto fits = planTiles(in);
    QVERIFY(fits.has_value());
    QCOMPARE(fits->tileRows, std::int64_t{1});
    QCOMPARE(fits->tileCols, std::int64_t{1});
    QCOMPARE(fits->tiles.size(), std::size_t{16});
}

void TestTilePlanner::requestedTileOverTensorLimit() {
    PlanningInput in;
    in.m = 64;
    in.k = 64;
    in.n = 64;
    in.dtype = DType::F32;
    in.maxTensorBytes = 16 * 64 * 4;
    in.requestedTile = std::pair<std::int64_t, std::int64_t>{32, 32};
    auto plan = planTiles(in);
    QVERIFY(!plan.has_value());
    QCOMPARE(plan.error().code, ErrorCode::LimitExceeded);
    in.requestedTile = std::pair<std::int64_t, std::int64_t>{16, 16};
    QVERIFY(planTiles(in).has_value());
}

void TestTilePlanner::maxTilesError() {
    PlanningInput in;
    in.m = 100;
    in.k = 3;
    in.n = 100;
    in.requestedTile = std::pair<std::int64_t, std::int64_t>{1, 1};
    in.maxTiles = 10000;
    auto exact = planTiles(in);
    QVERIFY(exact.has_value());
    QCOMPARE(exact->tiles.size(), std::size_t{10000});
    in.maxTiles = 9999;
    auto over = planTiles(in);
    QVERIFY(!over.has_value());
    QCOMPARE(over.error().code, ErrorCode::LimitExceeded);
    QVERIFY(over.error().message.find("9999") != std::string::npos);
}

void TestTilePlanner::rejectsEmptyMatrices() {
    for (auto [m, k, n] : std::vector<std::tuple<int, int, int>>{
             {0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {-1, 5, 5}, {5, 5, -3}}) {
        PlanningInput in;
        in.m = m;
        in.k = k;
        in.n = n;
        auto plan = planTiles(in);
        QVERIFY(!plan.has_value());
        QCOMPARE(plan.error().code, ErrorCode::ShapeMismatch);
    }
}

void TestTilePlanner::frameBudgetBoundsTheNodesCopies() {
    // 32768² f32 inputs (4 GiB each) and volunteers with plenty of memory: each task frame's A
    // rows and B columns still stay within the node's frame budget, and the tiles cover C.
    PlanningInput in;
    in.m = in.k = in.n = 32768;
    in.volunteers = 2;
    in.smallestVolunteerMemory = std::int64_t{64} << 30;
    auto plan = planTiles(in);
    QVERIFY(plan);
    const std::int64_t copied = (plan->tileRows + plan->tileCols) * in.k * 4;
    QVERIFY2(copied <= in.maxFrameBytes, std::to_string(copied).c_str());
    QVERIFY2(copied > in.maxFrameBytes / 4, "tiles shrink no more than the budget needs");
    QCOMPARE(coverageProblem(in, *plan), std::string());
    // Small jobs are planned as before: the budget is far away.
    in.m = in.k = in.n = 4096;
    auto small = planTiles(in);
    QVERIFY(small && small->tileRows == 2048 && small->tileCols == 2048);
}

QTEST_APPLESS_MAIN(TestTilePlanner)
#include "test_tile_planner.moc"
