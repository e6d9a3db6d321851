#include "goblin/verify/conv_check.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "conv_gather.hpp"
#include "conv_row_sums.hpp"
#include "goblin/core/finite_values.hpp"
#include "goblin/core/ops/op_geometry.hpp"

namespace goblin::verify {
namespace {

using core::MatrixView;
using core::Tensor;
using core::ops::OpCode;

using detail::gatherTaps;
using detail::Geometry;
using detail::im2col;
using detail::im2colColumns;
using detail::TapTables;

std::optional<Geometry> geometryOf(const core::graph::GraphNode& node, const core::Shape& first,
                                   const core::Shape& second, const core::Shape& result) {
    auto params = core::ops::conv2dParams(node.attrs);
    if (!params || params->groups < 1)
        return std::nullopt;
    const core::Shape* input = &first;
    const core::Shape* weight = &second;
    const core::Shape* output = &result;
    if (node.op == OpCode::Conv2dInputGrad) {
        input = &result;
        output = &first;
    } else if (node.op == OpCode::Conv2dWeightGrad) {
        weight = &result;
        output = &second;
    } else if (node.op != OpCode::Conv2d) {
        return std::nullopt;
    }
    if (input->size() != 4 || weight->size() != 4 || output->size() != 4)
        return std::nullopt;
    const core::Shape &x = *input, &wt = *weight, &y = *output;
    return core::ops::conv2dTaps(x, wt, y, *params);
}

MatrixView viewOf(const std::vector<std::byte>& storage, core::DType dtype, std::int64_t rows,
                  std::int64_t cols) {
    return MatrixView{dtype, storage.data(), rows, cols, cols};
}

template <class T> T* typed(std::vector<std::byte>& storage) {
    return reinterpret_cast<T*>(storage.data());
}

template <class T> std::vector<std::byte> buffer(std::int64_t count) {
    return std::vector<std::byte>(static_cast<std::size_t>(count) * sizeof(T));
}

// A grey-zone tile decided per element by the exact check when the claim's bits may be any
// GEMM's (GreyZone::CheckExactly); otherwise it escalates (the node recomputes, bit for bit).
MatmulCheckReport decided(MatmulCheckReport tile, const MatrixView& a, const MatrixView& b,
                          const MatrixView& c, GreyZone greyZone) {
    if (tile.verdict == Verdict::Escalate && greyZone == GreyZone::CheckExactly)
        return checkMatmulTileExactly(a, b, c);
    return tile;
}

// One tile of conv2d or its input gradient checked against `probe`: from A's row sums computed
// straight from the convolution's operands where they serve (conv_row_sums.hpp), else from A as
// gatherA() gathers it (f64's compensated sums read A); a grey-zone tile as `decided` says, with
// A gathered for the exact check.
template <class T, class GatherA, class RowSums>
MatmulCheckReport checked(const GatherA& gatherA, const RowSums& rowSums, const MatrixView& b,
                          const MatrixView& c, const ColumnProbe& probe, const Geometry& g,
                          GreyZone greyZone) {
    if (std::is_same_v<T, float> && detail::rowSumsApply(g, probe.vectors)) {
        const MatmulCheckReport tile = detail::checkWithRowSums(c.dtype, c, probe, rowSums());
        if (tile.verdict != Verdict::Escalate || greyZone != GreyZone::CheckExactly)
            return tile;
        return checkMatmulTileExactly(gatherA(), b, c);
    }
    const MatrixView a = gatherA();
    return decided(checkMatmulTileWithProbe(a, b, c, probe), a, b, c, greyZone);
}

// A's storage, m × k of T, made when first gathered (the row sums never need it).
template <class T>
MatrixView gatheredView(std::vector<std::byte>& storage, core::DType dtype, std::int64_t m,
                        std::int64_t k) {
    if (storage.empty())
        storage = buffer<T>(m * k);
    return viewOf(storage, dtype, m, k);
}

// Folds one tile's verdict into the report; false when the check must stop there.
bool fold(const MatmulCheckReport& tile, const std::string& where, ConvCheckReport& report) {
    if (tile.verdict == Verdict::Accepted) {
        report.maxErrorRatio = std::max(report.maxErrorRatio, tile.maxErrorRatio);
        return true;
    }
    report.verdict = tile.verdict;
    report.reason = where + ": " + tile.reason;
    return false;
}

// The weight gradient's im2col operand is N·OH·OW × K; it is built and checked in slabs of
// columns of at most this many elements (each slab of dw's columns is a tile of its own).
constexpr std::int64_t kMaxSlabElements = std::int64_t{1} << 22;

template <class T>
ConvCheckReport checkForward(const Tensor& xt, const Tensor& wt, const Tensor& yt,
                             const Geometry& g, const MatmulCheckOptions& options,
                             core::RandomSource& random, GreyZone greyZone) {
    ConvCheckReport report{Verdict::Accepted, 0.0, {}};
    const core::DType dtype = yt.dtype();
    const T* x = xt.values<T>().data();
    const T* w = wt.values<T>().data();
    const T* y = yt.values<T>().data();
    const std::int64_t k = g.ci * g.kh * g.kw, og = g.outPerGroup(), m = g.oh * g.ow;
    auto bStore = buffer<T>(k * og);
    std::vector<std::byte> aStore; // made only if A is gathered
    auto cStore = buffer<T>(m * og);
    const TapTables taps = TapTables::forward(g);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        T* bm = typed<T>(bStore); // B[(ch,ky,kx)][j] = w[group·og + j, (ch,ky,kx)]
        for (std::int64_t j = 0; j < og; ++j)
            for (std::int64_t i = 0; i < k; ++i)
                bm[i * og + j] = w[(group * og + j) * k + i];
        const MatrixView bv = viewOf(bStore, dtype, k, og);
        const ColumnProbe probe = probeColumns(bv, options, random);
        const std::vector<detail::BlockKernels> kernels = detail::rowSideKernels(probe);
        for (std::int64_t b = 0; b < g.n; ++b) {
            T* cm = typed<T>(cStore);
            for (std::int64_t j = 0; j < og; ++j) {
                const T* plane = y + g.out(b, group * og + j, 0, 0);
                for (std::int64_t pos = 0; pos < m; ++pos)
                    cm[pos * og + j] = plane[pos];
            }
            const MatrixView cv = viewOf(cStore, dtype, m, og);
            const auto gatherA = [&] {
                const MatrixView av = gatheredView<T>(aStore, dtype, m, k);
                im2col(x, g, taps, b, group, typed<T>(aStore));
                return av;
            };
            const auto rowSums = [&] {
                if constexpr (std::is_same_v<T, float>)
                    return detail::forwardRowSums(x + g.x(b, group * g.ci, 0, 0), g, kernels);
                else
                    return detail::BlockSums{};
            };
            const auto tile = checked<T>(gatherA, rowSums, bv, cv, probe, g, greyZone);
            if (!fold(tile, "group " + std::to_string(group) + " image " + std::to_string(b),
                      report))
                return report;
        }
    }
    return report;
}

template <class T>
ConvCheckReport checkInputGrad(const Tensor& dyt, const Tensor& wt, const Tensor& dxt,
                               const Geometry& g, const MatmulCheckOptions& options,
                               core::RandomSource& random, GreyZone greyZone) {
    ConvCheckReport report{Verdict::Accepted, 0.0, {}};
    const core::DType dtype = dxt.dtype();
    const T* dy = dyt.values<T>().data();
    const T* w = wt.values<T>().data();
    const T* dx = dxt.values<T>().data();
    const std::int64_t og = g.outPerGroup(), tapCount = g.kh * g.kw, k = og * tapCount,
                       m = g.h * g.w;
    auto bStore = buffer<T>(k * g.ci);
    std::vector<std::byte> aStore; // made only if A is gathered
    auto cStore = buffer<T>(m * g.ci);
    const TapTables taps = TapTables::backward(g);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        T* bm = typed<T>(bStore); // B[(j,ky,kx)][ch] = w[group·og + j, ch, ky, kx]
        for (std::int64_t j = 0; j < og; ++j)
            for (std::int64_t ch = 0; ch < g.ci; ++ch)
                for (std::int64_t t = 0; t < tapCount; ++t)
                    bm[(j * tapCount + t) * g.ci + ch] = w[g.wt(group * og + j, ch, 0, 0) + t];
        const MatrixView bv = viewOf(bStore, dtype, k, g.ci);
        const ColumnProbe probe = probeColumns(bv, options, random);
        const std::vector<detail::BlockKernels> kernels = detail::rowSideKernels(probe);
        for (std::int64_t b = 0; b < g.n; ++b) {
            const T* planes = dy + g.out(b, group * og, 0, 0);
            const auto gatherA = [&] {
                const MatrixView av = gatheredView<T>(aStore, dtype, m, k);
                T* row = typed<T>(aStore); // A[(iy,ix)][(j,ky,kx)] = dy[b, group·og + j, oy, ox]
                for (std::int64_t iy = 0; iy < g.h; ++iy)
                    for (std::int64_t ix = 0; ix < g.w; ++ix)
                        for (std::int64_t j = 0; j < og; ++j)
                            row = gatherTaps(planes + j * g.oh * g.ow, &taps.rowAt[iy * g.kh],
                                             &taps.columnAt[ix * g.kw], g.kh, g.kw,
                                             taps.whole(iy, ix), row);
                return av;
            };
            T* cm = typed<T>(cStore);
            for (std::int64_t ch = 0; ch < g.ci; ++ch) {
                const T* plane = dx + g.x(b, group * g.ci + ch, 0, 0);
                for (std::int64_t pos = 0; pos < m; ++pos)
                    cm[pos * g.ci + ch] = plane[pos];
            }
            const MatrixView cv = viewOf(cStore, dtype, m, g.ci);
            const auto rowSums = [&] {
                if constexpr (std::is_same_v<T, float>)
                    return detail::inputGradRowSums(planes, g, kernels);
                else
                    return detail::BlockSums{};
            };
            const auto tile = checked<T>(gatherA, rowSums, bv, cv, probe, g, greyZone);
            if (!fold(tile, "group " + std::to_string(group) + " image " + std::to_string(b),
                      report))
                return report;
        }
    }
    return report;
}

// A[j][(b,oy,ox)] = dy[b, group·og + j, oy, ox]: the weight gradient's A for one group.
template <class T> void gatherDy(const T* dy, const Geometry& g, std::int64_t group, T* am) {
    const std::int64_t m = g.oh * g.ow, inner = g.n * m;
    for (std::int64_t j = 0; j < g.outPerGroup(); ++j)
        for (std::int64_t b = 0; b < g.n; ++b) {
            const T* plane = dy + g.out(b, group * g.outPerGroup() + j, 0, 0);
            std::copy(plane, plane + m, am + j * inner + b * m);
        }
}

// The f32 weight gradient checked without gathering B (detail::weightGradProbe), where that
// serves and B's probes fit the slab budget; nullopt where it does not serve, or where a group's
// tile needs the exact check (which reads B: the caller checks it the gathered way).
std::optional<ConvCheckReport> checkWeightGradWithoutB(const Tensor& xt, const Tensor& dyt,
                                                       const Tensor& dwt, const Geometry& g,
                                                       const MatmulCheckOptions& options,
                                                       core::RandomSource& random,
                                                       GreyZone greyZone) {
    const std::int64_t og = g.outPerGroup(), k = g.ci * g.kh * g.kw, inner = g.n * g.oh * g.ow;
    const std::int64_t width =
        options.blockWidth > 0 ? options.blockWidth : defaultBlockWidth(inner);
    if (!detail::rowSumsApply(g, std::clamp(options.vectors, 1, detail::kMaxVectors)) ||
        3 * inner * ((k + width - 1) / width) > kMaxSlabElements)
        return std::nullopt;
    ConvCheckReport report{Verdict::Accepted, 0.0, {}};
    auto aStore = buffer<float>(og * inner);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        gatherDy(dyt.values<float>().data(), g, group, typed<float>(aStore));
        const ColumnProbe probe =
            detail::weightGradProbe(xt.values<float>().data(), group, g, options, random);
        const MatrixView av = viewOf(aStore, core::DType::F32, og, inner);
        const MatrixView cv{core::DType::F32,
                            dwt.bytes().data() +
                                static_cast<std::size_t>(group * og * k) * sizeof(float),
                            og, k, k};
        const MatmulCheckReport tile = detail::checkWithoutB(av, cv, probe);
        if (tile.verdict == Verdict::Escalate && greyZone == GreyZone::CheckExactly)
            return std::nullopt;
        if (!fold(tile, "group " + std::to_string(group), report))
            return report;
    }
    return report;
}

template <class T>
ConvCheckReport checkWeightGrad(const Tensor& xt, const Tensor& dyt, const Tensor& dwt,
                                const Geometry& g, const MatmulCheckOptions& options,
                                core::RandomSource& random, GreyZone greyZone) {
    ConvCheckReport report{Verdict::Accepted, 0.0, {}};
    const core::DType dtype = dwt.dtype();
    const T* x = xt.values<T>().data();
    const T* dy = dyt.values<T>().data();
    const std::int64_t og = g.outPerGroup(), k = g.ci * g.kh * g.kw, m = g.oh * g.ow,
                       inner = g.n * m;
    const std::int64_t slab = std::clamp<std::int64_t>(kMaxSlabElements / inner, 1, k);
    auto aStore = buffer<T>(og * inner);
    auto bStore = buffer<T>(inner * slab);
    const TapTables taps = TapTables::forward(g);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        gatherDy(dy, g, group, typed<T>(aStore));
        for (std::int64_t first = 0; first < k; first += slab) {
            const std::int64_t last = std::min(k, first + slab), width = last - first;
            for (std::int64_t b = 0; b < g.n; ++b) // B = im2col of the whole batch, these columns
                im2colColumns(x, g, taps, b, group, first, last, typed<T>(bStore) + b * m * width);
            const MatrixView cv{dtype,
                                dwt.bytes().data() +
                                    static_cast<std::size_t>(group * og * k + first) * sizeof(T),
                                og, width, k};
            const MatrixView av = viewOf(aStore, dtype, og, inner);
            const MatrixView bv = viewOf(bStore, dtype, inner, width);
            const auto tile =
                decided(checkMatmulTile(av, bv, cv, options, random), av, bv, cv, greyZone);
            if (!fold(tile, "group " + std::to_string(group) + " columns " + std::to_string(first),
                      report))
                return report;
        }
    }
    return report;
}

template <class T>
ConvCheckReport check(const core::graph::GraphNode& node, std::span<const Tensor> args,
                      const Tensor& claim, const Geometry& g, const MatmulCheckOptions& options,
                      core::RandomSource& random, GreyZone greyZone) {
    if (!core::allFinite(args[0].values<T>()) || !core::allFinite(args[1].values<T>()) ||
        !core::allFinite(claim.values<T>()))
        return {Verdict::Escalate, 0.0, "non-finite operand or value"};
    if (node.op == OpCode::Conv2d)
        return checkForward<T>(args[0], args[1], claim, g, options, random, greyZone);
    if (node.op == OpCode::Conv2dInputGrad)
        return checkInputGrad<T>(args[0], args[1], claim, g, options, random, greyZone);
    if constexpr (std::is_same_v<T, float>) {
        if (auto report =
                checkWeightGradWithoutB(args[0], args[1], claim, g, options, random, greyZone))
            return *report;
    }
    return checkWeightGrad<T>(args[0], args[1], claim, g, options, random, greyZone);
}

} // namespace

ConvSizes convSizesOf(const core::graph::GraphNode& node, const core::graph::GraphPlan& plan) {
    if (node.op != OpCode::Conv2d && node.op != OpCode::Conv2dInputGrad &&
        node.op != OpCode::Conv2dWeightGrad)
        return {};
    const auto g = geometryOf(node, plan.specs.at(node.args.at(0)).shape,
                              plan.specs.at(node.args.at(1)).shape, plan.specs.at(node.id).shape);
    if (!g || g->o % g->groups != 0)
        return {};
    if (node.op == OpCode::Conv2d)
        return {g->ci * g->kh * g->kw, g->outPerGroup()};
    if (node.op == OpCode::Conv2dInputGrad)
        return {g->outPerGroup() * g->kh * g->kw, g->ci};
    return {g->n * g->oh * g->ow, g->outPerGroup()};
}

ConvCheckReport checkClaimedConv(const core::graph::GraphNode& node,
                                 std::span<const core::Tensor> args, const core::Tensor& claim,
                                 const MatmulCheckOptions& options, core::RandomSource& random,
                                 GreyZone greyZone) {
    const auto g = geometryOf(node, args[0].shape(), args[1].shape(), claim.shape());
    if (!g || g->o % g->groups != 0)
        return {Verdict::Escalate, 0.0, "not a convolution this check knows"};
    if (claim.elementCount() == 0)
        return {Verdict::Accepted, 0.0, {}};
    if (args[0].elementCount() == 0 || args[1].elementCount() == 0)
        return {Verdict::Escalate, 0.0, "empty reduction"};
    if (claim.dtype() == core::DType::F64)
        return check<double>(node, args, claim, *g, options, random, greyZone);
    if (claim.dtype() == core::DType::F32)
        return check<float>(node, args, claim, *g, options, random, greyZone);
    return {Verdict::Escalate, 0.0, "not a floating-point convolution"};
}

} // namespace goblin::verify
