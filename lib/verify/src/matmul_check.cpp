#include "goblin/verify/matmul_check.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace goblin::verify {
namespace {

using core::DType;
using core::MatrixView;

constexpr int kMaxVectors = 64;
constexpr double kF64Roundoff = 0x1p-53;
// Relative slack on the bound: covers the rounding of the bound's own f64 sums and the final
// subtraction, so an honest result never fails by an ulp of the check arithmetic.
constexpr double kBoundSlack = 1.0 + 1e-12;

// The random vectors of one check, stored column by column (n entries each), with their absolute
// values, so the tile data is read once for all vectors.
struct ProbeVectors {
    std::int64_t length = 0;
    std::vector<double> values;
    std::vector<double> magnitudes;

    const double* value(int v) const { return values.data() + v * length; }
    const double* magnitude(int v) const { return magnitudes.data() + v * length; }
};

// Entries ±U[0.5, 1): never near zero, so a wrong C element always moves C·r by at least half its
// error. Built from raw engine bits so the sequence is the same with every standard library.
ProbeVectors makeProbeVectors(std::int64_t length, int count, std::uint64_t seed) {
    ProbeVectors probes{length, {}, {}};
    const auto total = static_cast<std::size_t>(length) * static_cast<std::size_t>(count);
    probes.values.resize(total);
    probes.magnitudes.resize(total);
    std::mt19937_64 engine(seed);
    for (std::size_t i = 0; i < total; ++i) {
        const std::uint64_t bits = engine();
        // 52 random bits below 0.5 keep every value exact and strictly under 1.
        const double magnitude = 0.5 + static_cast<double>(bits >> 12) * kF64Roundoff;
        probes.magnitudes[i] = magnitude;
        probes.values[i] = (bits & 1u) != 0 ? -magnitude : magnitude;
    }
    return probes;
}

// Four lanes of f64, one AVX2 register; plain SSE2 code splits it in two.
using Lanes = double __attribute__((vector_size(32)));
using LanesF32 = float __attribute__((vector_size(16)));
using LaneBits = std::uint64_t __attribute__((vector_size(32)));

// Helpers take lanes by reference: passing 32-byte vectors by value changes the ABI between the
// AVX2 clone and the baseline.
inline void loadLanes(const double* source, Lanes& lanes) {
    std::memcpy(&lanes, source, sizeof lanes);
}

inline void loadLanes(const float* source, Lanes& lanes) {
    LanesF32 narrow;
    std::memcpy(&narrow, source, sizeof narrow);
    lanes = __builtin_convertvector(narrow, Lanes);
}

inline void absLanes(const Lanes& lanes, Lanes& magnitude) {
    const LaneBits noSign = ~LaneBits{} >> 1;
    magnitude = reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(lanes) & noSign);
}

inline double sumLanes(const Lanes& lanes) {
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

// The four sums of two rows a, b against a pair of probes (x·y0, |x|·s0, x·y1, |x|·s1 for each
// row), each element widened to f64 once. The rows share every probe load (probes come from L2,
// rows from memory). Named accumulators, not arrays: GCC keeps them in registers. Reassociating
// the f64 sums is fine: the bound holds for any summation order.
template <class T>
[[gnu::always_inline]] inline void blockSumsBody(const T* const x[2], std::int64_t length,
                                                 const double* const probes[4], double sums[2][4]) {
    const T* const a = x[0];
    const T* const b = x[1];
    const double* const y0 = probes[0];
    const double* const s0 = probes[1];
    const double* const y1 = probes[2];
    const double* const s1 = probes[3];
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {}, b0 = {}, b1 = {}, b2 = {}, b3 = {};
    std::int64_t j = 0;
    for (; j + 4 <= length; j += 4) {
        Lanes probe0, scale0, probe1, scale1, value, magnitude;
        loadLanes(y0 + j, probe0);
        loadLanes(s0 + j, scale0);
        loadLanes(y1 + j, probe1);
        loadLanes(s1 + j, scale1);
        loadLanes(a + j, value);
        absLanes(value, magnitude);
        a0 += value * probe0;
        a1 += magnitude * scale0;
        a2 += value * probe1;
        a3 += magnitude * scale1;
        loadLanes(b + j, value);
        absLanes(value, magnitude);
        b0 += value * probe0;
        b1 += magnitude * scale0;
        b2 += value * probe1;
        b3 += magnitude * scale1;
    }
    double out[2][4] = {{sumLanes(a0), sumLanes(a1), sumLanes(a2), sumLanes(a3)},
                        {sumLanes(b0), sumLanes(b1), sumLanes(b2), sumLanes(b3)}};
    for (; j < length; ++j) {
        for (int r = 0; r < 2; ++r) {
            const auto value = static_cast<double>(x[r][j]);
            out[r][0] += value * y0[j];
            out[r][1] += std::fabs(value) * s0[j];
            out[r][2] += value * y1[j];
            out[r][3] += std::fabs(value) * s1[j];
        }
    }
    std::memcpy(sums, out, sizeof out);
}

// Compiled for AVX2+FMA and for the baseline, picked at load time for the CPU it runs on.
#if defined(__x86_64__) && defined(__GNUC__)
#define GOBLIN_CPU_CLONES [[gnu::target_clones("arch=x86-64-v3", "default")]]
#else
#define GOBLIN_CPU_CLONES
#endif

GOBLIN_CPU_CLONES void blockSums(const float* const x[2], std::int64_t length,
                                 const double* const probes[4], double sums[2][4]) {
    blockSumsBody(x, length, probes, sums);
}

GOBLIN_CPU_CLONES void blockSums(const double* const x[2], std::int64_t length,
                                 const double* const probes[4], double sums[2][4]) {
    blockSumsBody(x, length, probes, sums);
}

// Per-row products of a matrix with each probe: signedSums[v·rows + i] = (M·x_v)_i and
// absoluteSums[v·rows + i] = (|M|·y_v)_i, for probes x_v = xs + v·cols, y_v = ys + v·cols.
// Rows are read in place (any stride), two at a time; probes go in pairs, so each row is read
// ceil(count/2) times, from cache after the first.
struct RowProducts {
    std::vector<double> signedSums;
    std::vector<double> absoluteSums;
};

template <class T>
RowProducts multiplyRows(const MatrixView& matrix, int count, const double* xs, const double* ys) {
    const std::int64_t rows = matrix.rows;
    const std::int64_t cols = matrix.cols;
    const auto total = static_cast<std::size_t>(rows) * static_cast<std::size_t>(count);
    RowProducts result{std::vector<double>(total, 0.0), std::vector<double>(total, 0.0)};
    for (std::int64_t i = 0; i < rows; i += 2) {
        // An odd row count repeats the last row in the block's second half and drops it.
        const std::int64_t second = std::min(i + 1, rows - 1);
        const T* const block[2] = {matrix.row<T>(i), matrix.row<T>(second)};
        for (int v = 0; v < count; v += 2) {
            // An odd count repeats the last probe in the pair's second half likewise.
            const int w = std::min(v + 1, count - 1);
            const double* const probes[4] = {xs + v * cols, ys + v * cols, xs + w * cols,
                                             ys + w * cols};
            double sums[2][4];
            blockSums(block, cols, probes, sums);
            for (int r = 0; r < 2; ++r) {
                const std::int64_t row = r == 0 ? i : second;
                result.signedSums[static_cast<std::size_t>(v * rows + row)] = sums[r][0];
                result.absoluteSums[static_cast<std::size_t>(v * rows + row)] = sums[r][1];
                result.signedSums[static_cast<std::size_t>(w * rows + row)] = sums[r][2];
                result.absoluteSums[static_cast<std::size_t>(w * rows + row)] = sums[r][3];
            }
        }
    }
    return result;
}

RowProducts multiplyRows(const MatrixView& matrix, int count, const double* xs, const double* ys) {
    if (matrix.dtype == DType::F32)
        return multiplyRows<float>(matrix, count, xs, ys);
    return multiplyRows<double>(matrix, count, xs, ys);
}

// Whether a row holds only finite values, by the exponent bits (all ones for NaN and ±Inf), in a
// branch-free loop the compiler vectorises.
template <class T, class Bits, Bits kExponent>
[[gnu::always_inline]] inline bool rowIsFiniteBody(const T* row, std::int64_t length) {
    static_assert(sizeof(T) == sizeof(Bits));
    // Zero exactly when the exponent is all ones, so the minimum is zero iff a value is not finite.
    Bits lowest = kExponent;
    for (std::int64_t j = 0; j < length; ++j) {
        Bits bits;
        std::memcpy(&bits, row + j, sizeof bits);
        lowest = std::min<Bits>(lowest, ~bits & kExponent);
    }
    return lowest != 0;
}

GOBLIN_CPU_CLONES bool rowIsFinite(const float* row, std::int64_t length) {
    return rowIsFiniteBody<float, std::uint32_t, 0x7f800000u>(row, length);
}

GOBLIN_CPU_CLONES bool rowIsFinite(const double* row, std::int64_t length) {
    return rowIsFiniteBody<double, std::uint64_t, 0x7ff0000000000000u>(row, length);
}

template <class T>
std::optional<std::pair<std::int64_t, std::int64_t>> findNonFiniteIn(const MatrixView& view) {
    for (std::int64_t i = 0; i < view.rows; ++i) {
        const T* row = view.row<T>(i);
        if (rowIsFinite(row, view.cols))
            continue;
        const auto* end = row + view.cols;
        const auto* found = std::find_if(row, end, [](T value) { return !std::isfinite(value); });
        return std::pair{i, static_cast<std::int64_t>(found - row)};
    }
    return std::nullopt;
}

std::string shapeText(const MatrixView& view) {
    return std::to_string(view.rows) + "x" + std::to_string(view.cols);
}

MatmulCheckReport rejected(std::string reason) {
    MatmulCheckReport report;
    report.verdict = Verdict::Rejected;
    report.maxErrorRatio = std::numeric_limits<double>::infinity();
    report.reason = std::move(reason);
    return report;
}

std::optional<std::string> dtypeProblem(const MatrixView& a, const MatrixView& b,
                                        const MatrixView& c) {
    if (!core::isFloatingPoint(a.dtype))
        return "dtype " + std::string(core::wireName(a.dtype)) + " is not f32 or f64";
    if (b.dtype != a.dtype || c.dtype != a.dtype)
        return "dtypes differ: a " + std::string(core::wireName(a.dtype)) + ", b " +
               std::string(core::wireName(b.dtype)) + ", c " + std::string(core::wireName(c.dtype));
    return std::nullopt;
}

bool shapesFit(const MatrixView& a, const MatrixView& b, const MatrixView& c) {
    const bool nonNegative =
        a.rows >= 0 && a.cols >= 0 && b.rows >= 0 && b.cols >= 0 && c.rows >= 0 && c.cols >= 0;
    return nonNegative && b.rows == a.cols && c.rows == a.rows && c.cols == b.cols;
}

std::optional<std::string> nonFiniteProblem(const MatrixView& a, const MatrixView& b,
                                            const MatrixView& c) {
    const std::pair<const char*, const MatrixView*> operands[] = {{"c", &c}, {"a", &a}, {"b", &b}};
    for (const auto& [name, view] : operands) {
        if (auto at = findNonFinite(*view))
            return std::string(name) + " holds a non-finite value at (" +
                   std::to_string(at->first) + ", " + std::to_string(at->second) + ")";
    }
    return std::nullopt;
}

double errorRatio(double residual, double bound) {
    if (bound > 0.0)
        return residual / bound;
    return residual == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
}

// Per vector and row of C: (C·r)_i, (|C|·|r|)_i, (A·(B·r))_i and (|A|·(|B|·|r|))_i. Never A·B.
struct ProbeSums {
    RowProducts cr;
    RowProducts abr;
};

ProbeSums probeSums(const MatrixView& a, const MatrixView& c, const ColumnProbe& probe) {
    return {multiplyRows(c, probe.vectors, probe.values.data(), probe.magnitudes.data()),
            multiplyRows(a, probe.vectors, probe.signedSums.data(), probe.absoluteSums.data())};
}

// A NaN or Inf anywhere in a, b or c makes an absolute sum non-finite: the probes are never zero,
// and Inf·0 is NaN. So finite sums prove finite inputs without a separate pass over them.
bool absoluteSumsFinite(const ProbeSums& sums) {
    const auto finite = [](double value) { return std::isfinite(value); };
    return std::all_of(sums.cr.absoluteSums.begin(), sums.cr.absoluteSums.end(), finite) &&
           std::all_of(sums.abr.absoluteSums.begin(), sums.abr.absoluteSums.end(), finite);
}

// Compares every residual with its bound; the gates have passed.
MatmulCheckReport judge(const MatrixView& a, const MatrixView& b, const ProbeSums& sums) {
    const std::int64_t k = a.cols;
    // The check itself sums n terms for B·r and k for A·(B·r), in float64.
    const double productFactor =
        gamma(k, unitRoundoff(a.dtype)) + gamma(k + b.cols + 2, kF64Roundoff);
    const double resultFactor = gamma(b.cols + 1, kF64Roundoff);
    const double minNormal = a.dtype == DType::F32
                                 ? static_cast<double>(std::numeric_limits<float>::min())
                                 : std::numeric_limits<double>::min();
    const double underflowTerm = static_cast<double>(k) * minNormal;
    MatmulCheckReport report;
    report.verdict = Verdict::Accepted;
    std::size_t worst = 0;
    for (std::size_t at = 0; at < sums.cr.signedSums.size(); ++at) {
        const double residual = std::fabs(sums.cr.signedSums[at] - sums.abr.signedSums[at]);
        const double bound =
            (productFactor * sums.abr.absoluteSums[at] + resultFactor * sums.cr.absoluteSums[at]) *
                kBoundSlack +
            underflowTerm;
        // A NaN residual (overflow inside the check) fails the comparison and rejects.
        const double ratio = std::isnan(residual) ? std::numeric_limits<double>::infinity()
                                                  : errorRatio(residual, bound);
        if (!(residual <= bound))
            report.verdict = Verdict::Rejected;
        if (at == 0 || ratio > report.maxErrorRatio) {
            report.maxErrorRatio = ratio;
            report.residual = residual;
            report.bound = bound;
            worst = at;
        }
    }
    if (report.verdict == Verdict::Rejected)
        report.reason = "Freivalds check failed at row " +
                        std::to_string(worst % static_cast<std::size_t>(a.rows)) + ": residual " +
                        std::to_string(report.residual) + " exceeds bound " +
                        std::to_string(report.bound) + " (ratio " +
                        std::to_string(report.maxErrorRatio) + ")";
    return report;
}

} // namespace

double unitRoundoff(core::DType dtype) {
    assert(core::isFloatingPoint(dtype) && "unitRoundoff() needs a floating-point dtype");
    return dtype == DType::F32 ? 0x1p-24 : kF64Roundoff;
}

double gamma(std::int64_t n, double unitRoundoff) {
    assert(n >= 0 && "gamma() needs n >= 0");
    const double nu = static_cast<double>(n) * unitRoundoff;
    if (nu >= 1.0)
        return std::numeric_limits<double>::infinity();
    return nu / (1.0 - nu);
}

std::optional<std::pair<std::int64_t, std::int64_t>> findNonFinite(const core::MatrixView& view) {
    if (view.dtype == DType::F32)
        return findNonFiniteIn<float>(view);
    if (view.dtype == DType::F64)
        return findNonFiniteIn<double>(view);
    return std::nullopt;
}

ColumnProbe probeColumns(const core::MatrixView& b, const MatmulCheckOptions& options) {
    assert(core::isFloatingPoint(b.dtype) && "probeColumns() needs an f32 or f64 view");
    ColumnProbe probe;
    probe.dtype = b.dtype;
    probe.k = b.rows;
    probe.n = b.cols;
    probe.vectors = std::clamp(options.vectors, 2, kMaxVectors);
    ProbeVectors vectors = makeProbeVectors(b.cols, probe.vectors, options.seed);
    RowProducts br = multiplyRows(b, probe.vectors, vectors.value(0), vectors.magnitude(0));
    probe.values = std::move(vectors.values);
    probe.magnitudes = std::move(vectors.magnitudes);
    probe.signedSums = std::move(br.signedSums);
    probe.absoluteSums = std::move(br.absoluteSums);
    return probe;
}

MatmulCheckReport checkMatmulTile(const core::MatrixView& a, const core::MatrixView& b,
                                  const core::MatrixView& c, const MatmulCheckOptions& options) {
    if (auto problem = dtypeProblem(a, b, c))
        return rejected(*problem);
    if (!shapesFit(a, b, c))
        return rejected("shapes do not fit: a " + shapeText(a) + ", b " + shapeText(b) + ", c " +
                        shapeText(c) + " (need m x k, k x n, m x n)");
    return checkMatmulTileWithProbe(a, b, c, probeColumns(b, options));
}

MatmulCheckReport checkMatmulTileWithProbe(const core::MatrixView& a, const core::MatrixView& b,
                                           const core::MatrixView& c, const ColumnProbe& probe) {
    if (auto problem = dtypeProblem(a, b, c))
        return rejected(*problem);
    if (!shapesFit(a, b, c))
        return rejected("shapes do not fit: a " + shapeText(a) + ", b " + shapeText(b) + ", c " +
                        shapeText(c) + " (need m x k, k x n, m x n)");
    assert(probe.dtype == b.dtype && probe.k == b.rows && probe.n == b.cols &&
           "the probe was made for another block of B");
    assert(a.rowStride >= a.cols && b.rowStride >= b.cols && c.rowStride >= c.cols &&
           "a view's rowStride is shorter than its row");
    if (a.rows == 0 || b.cols == 0) {
        // Nothing to multiply, but a non-finite input is still refused.
        if (auto problem = nonFiniteProblem(a, b, c))
            return rejected(*problem);
        MatmulCheckReport empty;
        empty.verdict = Verdict::Accepted;
        return empty;
    }
    const ProbeSums sums = probeSums(a, c, probe);
    // The NaN/Inf gate (c first, then a, b) scans the data only when the sums say it must.
    if (!absoluteSumsFinite(sums)) {
        if (auto problem = nonFiniteProblem(a, b, c))
            return rejected(*problem);
    }
    return judge(a, b, sums);
}

} // namespace goblin::verify
