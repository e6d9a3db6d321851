// The matmul tile check against honest products and single-element lies (docs/verification.md,
// "Matmul tiles"): false rejects and escalations over many honest tile checks (products from the
// CPU backend — Eigen/OpenBLAS —, CLBlast on OpenCL where a device exists, and a plain f32 loop;
// f32 and f64; awkward and tall-skinny shapes; magnitudes mixing over 10⁶; cancellation-heavy
// rows), the check's cost ÷ the tile's compute at N = 2048 and 4096, and the largest single-element
// corruption that still passes, as a multiple of its own bound (bisection).
// Usage: goblin-bench-matmul-check [--checks N] [--sample] [--no-cost] [--no-opencl] [--only-cost]
// [--only-bisection] [--bisection-trials N]
// --sample: a few thousand checks and no cost section; exits 1 on any false reject (a ctest).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "goblin/compute/blas_kernel.hpp"
#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin/compute/opencl_backend.hpp"
#include "goblin/core/random_source.hpp"
#include "goblin/verify/matmul_check.hpp"

using namespace goblin;
using Clock = std::chrono::steady_clock;
using core::DType;
using core::Tensor;
using verify::Verdict;

namespace {

enum class Profile { Uniform, Positive, MixedScales, ElementSpread, Cancelling };
constexpr Profile kProfiles[] = {Profile::Uniform, Profile::Positive, Profile::MixedScales,
                                 Profile::ElementSpread, Profile::Cancelling};

const char* profileName(Profile profile) {
    switch (profile) {
    case Profile::Uniform:
        return "uniform ±[0.1,2)";
    case Profile::Positive:
        return "positive [0.1,2)";
    case Profile::MixedScales:
        return "row/col scales 1e±3";
    case Profile::ElementSpread:
        return "elements ±1e±3";
    case Profile::Cancelling:
        return "cancelling pairs";
    }
    return "?";
}

struct Shape {
    std::int64_t m, k, n;
};

// Awkward sizes (odd, prime, 1), tall-skinny and short-wide, and a few larger tiles.
constexpr Shape kShapes[] = {{1, 1, 1},      {3, 5, 7},       {17, 33, 9},    {1, 300, 1},
                             {40, 1, 37},    {63, 130, 65},   {100, 777, 60}, {257, 1000, 129},
                             {2000, 64, 3},  {3, 64, 2000},   {5, 2048, 700}, {700, 2048, 5},
                             {31, 17, 1024}, {128, 512, 128}, {200, 4000, 33}};

double logUniform(std::mt19937_64& engine, double decades) {
    return std::pow(10.0, std::uniform_real_distribution<double>(-decades, decades)(engine));
}

void setAt(Tensor& t, std::int64_t index, double value) {
    if (t.dtype() == DType::F32)
        t.values<float>()[static_cast<std::size_t>(index)] = static_cast<float>(value);
    else
        t.values<double>()[static_cast<std::size_t>(index)] = value;
}

double at(const Tensor& t, std::int64_t index) {
    if (t.dtype() == DType::F32)
        return static_cast<double>(t.values<float>()[static_cast<std::size_t>(index)]);
    return t.values<double>()[static_cast<std::size_t>(index)];
}

// A (m×k) and B (k×n) of one profile. Cancelling: B's rows come in pairs (y, −y + small) and A's
// columns in equal pairs, so every term of a dot product is cancelled by its neighbour.
std::pair<Tensor, Tensor> inputs(DType dtype, Shape shape, Profile profile, std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    Tensor a = Tensor::allocate(dtype, {shape.m, shape.k}).value();
    Tensor b = Tensor::allocate(dtype, {shape.k, shape.n}).value();
    std::uniform_real_distribution<double> magnitude(0.1, 2.0);
    const auto signedValue = [&] {
        const double value = magnitude(engine);
        return profile == Profile::Positive || (engine() & 1u) == 0 ? value : -value;
    };
    std::vector<double> rowScale(static_cast<std::size_t>(shape.m), 1.0);
    std::vector<double> innerScale(static_cast<std::size_t>(shape.k), 1.0);
    std::vector<double> columnScale(static_cast<std::size_t>(shape.n), 1.0);
    if (profile == Profile::MixedScales) {
        for (auto* scales : {&rowScale, &innerScale, &columnScale})
            for (double& scale : *scales)
                scale = logUniform(engine, 3.0);
    }
    for (std::int64_t i = 0; i < shape.m; ++i)
        for (std::int64_t p = 0; p < shape.k; ++p) {
            double value = signedValue() * rowScale[static_cast<std::size_t>(i)] *
                           innerScale[static_cast<std::size_t>(p)];
            if (profile == Profile::ElementSpread)
                value *= logUniform(engine, 3.0);
            if (profile == Profile::Cancelling && p % 2 == 1)
                value = at(a, i * shape.k + p - 1);
            setAt(a, i * shape.k + p, value);
        }
    for (std::int64_t p = 0; p < shape.k; ++p)
        for (std::int64_t j = 0; j < shape.n; ++j) {
            double value = signedValue() * columnScale[static_cast<std::size_t>(j)];
            if (profile == Profile::ElementSpread)
                value *= logUniform(engine, 3.0);
            if (profile == Profile::Cancelling && p % 2 == 1)
                value = -at(b, (p - 1) * shape.n + j) * (1.0 + 1e-3 * signedValue());
            setAt(b, p * shape.n + j, value);
        }
    return {std::move(a), std::move(b)};
}

// The plainest honest product: accumulated in the tile's dtype by a loop in index order.
template <class T> Tensor loopProductOf(const Tensor& a, const Tensor& b) {
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    Tensor c = Tensor::allocate(a.dtype(), {m, n}).value();
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            T sum = 0;
            for (std::int64_t p = 0; p < k; ++p)
                sum += a.values<T>()[static_cast<std::size_t>(i * k + p)] *
                       b.values<T>()[static_cast<std::size_t>(p * n + j)];
            c.values<T>()[static_cast<std::size_t>(i * n + j)] = sum;
        }
    return c;
}

Tensor loopProduct(const Tensor& a, const Tensor& b) {
    return a.dtype() == DType::F32 ? loopProductOf<float>(a, b) : loopProductOf<double>(a, b);
}

struct Producers {
    compute::EigenCpuBackend cpu{compute::CpuBackendOptions{1}};
    std::unique_ptr<compute::OpenClBackend> opencl;
};

struct Tally {
    std::int64_t checks = 0, accepted = 0, escalated = 0, rejected = 0, exactRejects = 0;
    double worstEstimate = 0, worstExact = 0;
};

void runHonest(const Tensor& a, const Tensor& b, const Tensor& c, int seeds, std::uint64_t seedBase,
               Tally& tally) {
    const auto av = core::viewOf(a), bv = core::viewOf(b), cv = core::viewOf(c);
    bool exactDone = false;
    for (int s = 0; s < seeds; ++s) {
        core::SeededRandom random(seedBase + static_cast<std::uint64_t>(s));
        const auto report = verify::checkMatmulTile(av, bv, cv, {}, random);
        ++tally.checks;
        if (report.verdict == Verdict::Accepted)
            ++tally.accepted;
        else if (report.verdict == Verdict::Rejected) {
            ++tally.rejected;
            std::printf("  FALSE REJECT: %s\n", report.reason.c_str());
        } else
            ++tally.escalated;
        tally.worstEstimate = std::max(tally.worstEstimate, report.maxErrorRatio);
        if (report.verdict == Verdict::Escalate && !exactDone) {
            // The exact check decides the same way whatever the vectors: once per product.
            const auto exact = verify::checkMatmulTileExactly(av, bv, cv);
            exactDone = true;
            tally.worstExact = std::max(tally.worstExact, exact.maxErrorRatio);
            if (exact.verdict != Verdict::Accepted) {
                ++tally.exactRejects;
                std::printf("  FALSE EXACT REJECT: %s\n", exact.reason.c_str());
            }
        }
    }
}

bool honestCampaign(Producers& producers, std::int64_t targetChecks, bool useOpenCl) {
    std::printf("== honest tiles: false rejects and escalations ==\n");
    const int producerCount = useOpenCl && producers.opencl ? 3 : 2;
    const std::int64_t cases =
        static_cast<std::int64_t>(std::size(kShapes)) * std::size(kProfiles) * 2 * producerCount;
    const int seeds =
        static_cast<int>(std::max<std::int64_t>(1, (targetChecks + cases - 1) / cases));
    Tally total;
    std::printf("%-14s %-20s %-5s %-14s %8s %8s %8s %10s\n", "shape", "inputs", "dtype", "product",
                "checks", "escal.", "reject", "max est.");
    std::uint64_t seedBase = 1000;
    for (const Shape& shape : kShapes) {
        for (Profile profile : kProfiles) {
            for (DType dtype : {DType::F32, DType::F64}) {
                auto [a, b] = inputs(dtype, shape, profile, seedBase++);
                for (int producer = 0; producer < producerCount; ++producer) {
                    const char* name = producer == 0   ? "cpu-eigen"
                                       : producer == 1 ? "plain loop"
                                                       : "opencl-clblast";
                    Tensor c;
                    if (producer == 1)
                        c = loopProduct(a, b);
                    else {
                        compute::Backend& backend =
                            producer == 0 ? static_cast<compute::Backend&>(producers.cpu)
                                          : *producers.opencl;
                        auto product = backend.matmul(a, b);
                        if (!product) {
                            std::printf("  %s failed: %s\n", name,
                                        product.error().describe().c_str());
                            continue;
                        }
                        c = std::move(*product);
                    }
                    Tally tally;
                    runHonest(a, b, c, seeds, seedBase * 7919, tally);
                    if (tally.escalated > 0 || tally.rejected > 0)
                        std::printf("%4lldx%5lldx%4lld %-20s %-5s %-14s %8lld %8lld %8lld %10.3g\n",
                                    static_cast<long long>(shape.m),
                                    static_cast<long long>(shape.k),
                                    static_cast<long long>(shape.n), profileName(profile),
                                    dtype == DType::F32 ? "f32" : "f64", name,
                                    static_cast<long long>(tally.checks),
                                    static_cast<long long>(tally.escalated),
                                    static_cast<long long>(tally.rejected), tally.worstEstimate);
                    total.checks += tally.checks;
                    total.accepted += tally.accepted;
                    total.escalated += tally.escalated;
                    total.rejected += tally.rejected;
                    total.exactRejects += tally.exactRejects;
                    total.worstEstimate = std::max(total.worstEstimate, tally.worstEstimate);
                    total.worstExact = std::max(total.worstExact, tally.worstExact);
                }
            }
        }
    }
    std::printf("honest checks: %lld; false rejects: %lld (exact check: %lld); escalated: %lld "
                "(%.4f %%); worst estimated element ratio %.3g, worst exact ratio of an "
                "escalated tile %.3g\n\n",
                static_cast<long long>(total.checks), static_cast<long long>(total.rejected),
                static_cast<long long>(total.exactRejects), static_cast<long long>(total.escalated),
                100.0 * static_cast<double>(total.escalated) / static_cast<double>(total.checks),
                total.worstEstimate, total.worstExact);
    return total.rejected == 0 && total.exactRejects == 0;
}

// γ_K·(|A||B|)_ij in f64.
double elementBound(const Tensor& a, const Tensor& b, std::int64_t i, std::int64_t j) {
    const std::int64_t k = a.shape()[1], n = b.shape()[1];
    double sum = 0;
    for (std::int64_t p = 0; p < k; ++p)
        sum += std::fabs(at(a, i * k + p)) * std::fabs(at(b, p * n + j));
    return verify::gamma(k, verify::unitRoundoff(a.dtype())) * sum;
}

// φ of element (i, j): its weighted bound ÷ its block's mean weighted bound (docs/verification.md,
// "Single corrupted element"); the 2× guarantee holds where φ ≥ 1, and relative to the block's
// mean below.
double elementShare(const Tensor& a, const Tensor& b, std::int64_t i, std::int64_t j) {
    core::SeededRandom random(0);
    const auto probe = verify::probeColumns(core::viewOf(b), {}, random);
    std::int64_t block = 0;
    while (probe.blockStarts[static_cast<std::size_t>(block) + 1] <= j)
        ++block;
    const std::int64_t begin = probe.blockStarts[static_cast<std::size_t>(block)];
    const std::int64_t end = probe.blockStarts[static_cast<std::size_t>(block) + 1];
    double sum = 0;
    for (std::int64_t column = begin; column < end; ++column)
        sum += elementBound(a, b, i, column) * probe.weights[static_cast<std::size_t>(column)];
    const double own = elementBound(a, b, i, j) * probe.weights[static_cast<std::size_t>(j)];
    return sum > 0 ? own * static_cast<double>(end - begin) / sum : 1.0;
}

// The largest multiple f of its own bound by which one element may be off and still be accepted
// by the Freivalds check (f*), by bisection; the whole pipeline (grey zone → exact check) too.
void corruptionBisection(Producers& producers, int trials) {
    std::printf("== largest single-element corruption that still passes (× its own bound) ==\n");
    std::mt19937_64 engine(99);
    std::vector<double> freivalds, pipeline;
    // Largest passing f* and trials with f* ≥ 2, per dtype and input profile (Freivalds alone).
    double worst[2][std::size(kProfiles)] = {};
    int over[2][std::size(kProfiles)] = {}, count[2][std::size(kProfiles)] = {};
    // Largest passing f* over trials whose element is at least its block's mean (φ ≥ 1).
    double worstAtMean[2] = {};
    int atMean[2] = {};
    for (int trial = 0; trial < trials; ++trial) {
        const Shape shape = kShapes[6 + engine() % (std::size(kShapes) - 6)];
        const std::size_t profileIndex = engine() % std::size(kProfiles);
        const Profile profile = kProfiles[profileIndex];
        const DType dtype = engine() % 2 == 0 ? DType::F32 : DType::F64;
        auto [a, b] = inputs(dtype, shape, profile, engine());
        auto product = producers.cpu.matmul(a, b);
        if (!product)
            continue;
        const std::int64_t i =
            static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(shape.m));
        const std::int64_t j =
            static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(shape.n));
        const double bound = elementBound(a, b, i, j);
        const double sign = engine() % 2 == 0 ? 1.0 : -1.0;
        const std::uint64_t seed = engine();
        const double honest = at(*product, i * shape.n + j);
        Tensor c = core::copyToTensor(core::viewOf(*product)).value();
        const auto passes = [&](double factor, bool throughExact) {
            setAt(c, i * shape.n + j, honest + sign * factor * bound);
            core::SeededRandom random(seed);
            const auto av = core::viewOf(a), bv = core::viewOf(b), cv = core::viewOf(c);
            const auto report = verify::checkMatmulTile(av, bv, cv, {}, random);
            if (report.verdict == Verdict::Escalate && throughExact)
                return verify::checkMatmulTileExactly(av, bv, cv).verdict == Verdict::Accepted;
            return report.verdict == Verdict::Accepted;
        };
        for (bool throughExact : {false, true}) {
            double low = 0.0, high = 16.0;
            if (passes(high, throughExact)) {
                (throughExact ? pipeline : freivalds).push_back(high);
                continue;
            }
            for (int step = 0; step < 24; ++step) {
                const double middle = 0.5 * (low + high);
                (passes(middle, throughExact) ? low : high) = middle;
            }
            (throughExact ? pipeline : freivalds).push_back(low);
        }
        const int d = dtype == DType::F32 ? 0 : 1;
        const double share = elementShare(a, b, i, j);
        if (share >= 1.0) {
            worstAtMean[d] = std::max(worstAtMean[d], freivalds.back());
            ++atMean[d];
        }
        if (freivalds.back() >= 2.0)
            std::printf("  f* %.3f: %s %lldx%lldx%lld %s, element share phi %.3f\n",
                        freivalds.back(), d == 0 ? "f32" : "f64", static_cast<long long>(shape.m),
                        static_cast<long long>(shape.k), static_cast<long long>(shape.n),
                        profileName(profile), share);
        worst[d][profileIndex] = std::max(worst[d][profileIndex], freivalds.back());
        over[d][profileIndex] += freivalds.back() >= 2.0 ? 1 : 0;
        ++count[d][profileIndex];
    }
    for (int d = 0; d < 2; ++d)
        for (std::size_t p = 0; p < std::size(kProfiles); ++p)
            std::printf("  %s %-20s trials %3d: largest passing f* %7.3f, f* >= 2 in %d\n",
                        d == 0 ? "f32" : "f64", profileName(kProfiles[p]), count[d][p], worst[d][p],
                        over[d][p]);
    for (int d = 0; d < 2; ++d)
        std::printf("  %s elements at or above their block's mean bound (phi >= 1), trials %d: "
                    "largest passing f* %.3f\n",
                    d == 0 ? "f32" : "f64", atMean[d], worstAtMean[d]);
    for (auto* values : {&freivalds, &pipeline}) {
        std::sort(values->begin(), values->end());
        const auto over2 =
            std::count_if(values->begin(), values->end(), [](double f) { return f >= 2.0; });
        std::printf("%-40s trials %zu: largest passing f* = %.3f, median %.3f, f* ≥ 2 in %lld\n",
                    values == &freivalds ? "Freivalds alone (grey zone = caught):"
                                         : "pipeline (grey zone → exact check):",
                    values->size(), values->empty() ? 0.0 : values->back(),
                    values->empty() ? 0.0 : (*values)[values->size() / 2],
                    static_cast<long long>(over2));
    }
    std::printf("\n");
}

double secondsOf(const auto& work, int repeats) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto started = Clock::now();
        work();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - started).count());
    }
    return best;
}

void costTable(Producers& producers) {
    std::printf("== verification ÷ tile compute (one thread each; tile = N×N·N×N) ==\n");
    std::printf("%-5s %6s %12s %12s %12s %10s %12s\n", "dtype", "N", "tile s", "check s",
                "probe-shared", "check/tile", "shared/tile");
    for (DType dtype : {DType::F32, DType::F64}) {
        for (std::int64_t n : {2048, 4096}) {
            auto [a, b] = inputs(dtype, {n, n, n}, Profile::Uniform, 5);
            Tensor c;
            const double tile = secondsOf([&] { c = std::move(*producers.cpu.matmul(a, b)); }, 2);
            const auto av = core::viewOf(a), bv = core::viewOf(b), cv = core::viewOf(c);
            core::SeededRandom random(3);
            Verdict verdict = Verdict::Rejected;
            const double check = secondsOf(
                [&] { verdict = verify::checkMatmulTile(av, bv, cv, {}, random).verdict; }, 3);
            const auto probe = verify::probeColumns(bv, {}, random);
            const double shared =
                secondsOf([&] { (void)verify::checkMatmulTileWithProbe(av, bv, cv, probe); }, 3);
            std::printf("%-5s %6lld %12.3f %12.4f %12.4f %9.2f%% %11.2f%%  (%s)\n",
                        dtype == DType::F32 ? "f32" : "f64", static_cast<long long>(n), tile, check,
                        shared, 100 * check / tile, 100 * shared / tile,
                        verdict == Verdict::Accepted ? "accepted" : "NOT accepted");
            std::fflush(stdout);
        }
    }
    std::printf("block width %lld at K = 2048 and %lld at K = 4096, %d vectors, threshold %.2f\n\n",
                static_cast<long long>(verify::defaultBlockWidth(2048)),
                static_cast<long long>(verify::defaultBlockWidth(4096)),
                verify::MatmulCheckOptions{}.vectors, verify::MatmulCheckOptions{}.threshold);
}

} // namespace

int main(int argc, char** argv) {
    compute::restartWithBetterBlasKernel(argv); // the kernel goblin-volunteer runs
    std::int64_t checks = 100000;
    int bisectionTrials = 400;
    bool sample = false, cost = true, useOpenCl = true, onlyCost = false, onlyBisection = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--checks" && i + 1 < argc)
            checks = std::atoll(argv[++i]);
        else if (arg == "--sample")
            sample = true;
        else if (arg == "--no-cost")
            cost = false;
        else if (arg == "--no-opencl")
            useOpenCl = false;
        else if (arg == "--only-cost")
            onlyCost = true;
        else if (arg == "--only-bisection")
            onlyBisection = true;
        else if (arg == "--bisection-trials" && i + 1 < argc)
            bisectionTrials = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: goblin-bench-matmul-check [--checks N] [--sample] "
                                 "[--no-cost] [--no-opencl] [--only-cost] [--only-bisection] "
                                 "[--bisection-trials N]\n");
            return arg == "--help" || arg == "-h" ? 0 : 2;
        }
    }
    if (sample) {
        checks = std::min<std::int64_t>(checks, 3000);
        cost = false;
        useOpenCl = false;
    }
    Producers producers;
    if (onlyBisection) {
        corruptionBisection(producers, bisectionTrials);
        return 0;
    }
    if (onlyCost) {
        costTable(producers);
        return 0;
    }
    if (useOpenCl) {
        (void)compute::prepareOpenClCache(std::filesystem::temp_directory_path() /
                                          "goblin-bench-opencl");
        auto opencl = compute::OpenClBackend::create({});
        if (opencl) {
            std::printf("OpenCL device: %s\n", (*opencl)->device().name.c_str());
            producers.opencl = std::move(*opencl);
        } else
            std::printf("no OpenCL backend: %s\n", opencl.error().describe().c_str());
    }
    const bool honest = honestCampaign(producers, checks, useOpenCl);
    if (!sample)
        corruptionBisection(producers, bisectionTrials);
    if (cost)
        costTable(producers);
    return honest ? 0 : 1;
}
