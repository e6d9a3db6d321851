#include "goblin/verify/conv_check.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "goblin/core/finite_values.hpp"
#include "goblin/core/ops/op_geometry.hpp"

namespace goblin::verify {
namespace {

using core::MatrixView;
using core::Tensor;
using core::ops::OpCode;

// One convolution's sizes, offsets and taps.
using Geometry = core::ops::Conv2dTaps;

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

// Where each tap reads, worked out once per check so that the gathers below do no index
// arithmetic per element. Forward (conv2d and its weight gradient): rowAt[oy·kh + ky] = iy·w and
// columnAt[ox·kw + kx] = ix, −1 where the tap falls in the padding. Backward (the input
// gradient): rowAt[iy·kh + ky] = oy·ow and columnAt[ix·kw + kx] = ox of the output position that
// reads input (iy, ix) through the tap, −1 where none does. rowWhole[r] (columnWhole[c]): none of
// row r's (column c's) kh (kw) entries is −1.
struct TapTables {
    std::vector<std::int64_t> rowAt, columnAt;
    std::vector<char> rowWhole, columnWhole;

    // Whether every tap of position (r, c) reads a value (no check per element needed).
    bool whole(std::int64_t r, std::int64_t c) const { return rowWhole[r] && columnWhole[c]; }
    void markWhole(std::int64_t kh, std::int64_t kw) {
        const auto wholeOf = [](const std::vector<std::int64_t>& at, std::int64_t taps) {
            std::vector<char> flags;
            for (std::size_t first = 0; first < at.size(); first += static_cast<std::size_t>(taps))
                flags.push_back(std::none_of(at.begin() + first, at.begin() + first + taps,
                                             [](std::int64_t v) { return v < 0; }));
            return flags;
        };
        rowWhole = wholeOf(rowAt, kh);
        columnWhole = wholeOf(columnAt, kw);
    }

    static TapTables forward(const Geometry& g) {
        TapTables t;
        for (std::int64_t oy = 0; oy < g.oh; ++oy)
            for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                const std::int64_t iy = g.inputRow(oy, ky);
                t.rowAt.push_back(g.insideRow(iy) ? iy * g.w : -1);
            }
        for (std::int64_t ox = 0; ox < g.ow; ++ox)
            for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                const std::int64_t ix = g.inputColumn(ox, kx);
                t.columnAt.push_back(g.insideColumn(ix) ? ix : -1);
            }
        t.markWhole(g.kh, g.kw);
        return t;
    }
    static TapTables backward(const Geometry& g) {
        TapTables t;
        for (std::int64_t iy = 0; iy < g.h; ++iy)
            for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                const std::int64_t oy = g.outputRow(iy, ky);
                t.rowAt.push_back(oy < 0 ? -1 : oy * g.ow);
            }
        for (std::int64_t ix = 0; ix < g.w; ++ix)
            for (std::int64_t kx = 0; kx < g.kw; ++kx)
                t.columnAt.push_back(g.outputColumn(ix, kx));
        t.markWhole(g.kh, g.kw);
        return t;
    }
};

// Appends one (row, column) position's taps of one plane, (ky, kx) in order: plane[rowAt +
// columnAt] or 0 where either is −1. `rows` and `columns` point at the position's kh and kw table
// entries; `whole`: none of them is −1.
template <class T>
T* gatherTaps(const T* plane, const std::int64_t* rows, const std::int64_t* columns,
              std::int64_t kh, std::int64_t kw, bool whole, T* out) {
    if (whole) {
        for (std::int64_t ky = 0; ky < kh; ++ky)
            for (std::int64_t kx = 0; kx < kw; ++kx)
                *out++ = plane[rows[ky] + columns[kx]];
        return out;
    }
    for (std::int64_t ky = 0; ky < kh; ++ky) {
        const std::int64_t r = rows[ky];
        if (r < 0) {
            out = std::fill_n(out, kw, T(0));
            continue;
        }
        for (std::int64_t kx = 0; kx < kw; ++kx)
            *out++ = columns[kx] < 0 ? T(0) : plane[r + columns[kx]];
    }
    return out;
}

// im2col of image b, group g: rows (oy, ox), columns (ch, ky, kx). `taps` is TapTables::forward.
template <class T>
void im2col(const T* x, const Geometry& g, const TapTables& taps, std::int64_t b,
            std::int64_t group, T* rows) {
    const T* channels = x + g.x(b, group * g.ci, 0, 0);
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox)
            for (std::int64_t ch = 0; ch < g.ci; ++ch)
                rows = gatherTaps(channels + ch * g.h * g.w, &taps.rowAt[oy * g.kh],
                                  &taps.columnAt[ox * g.kw], g.kh, g.kw, taps.whole(oy, ox), rows);
}

// Columns [first, last) of image b's im2col in group g (rows (oy, ox), last − first wide): the
// weight gradient's B in slabs of columns, so its memory stays bounded. `taps` is
// TapTables::forward.
template <class T>
void im2colColumns(const T* x, const Geometry& g, const TapTables& taps, std::int64_t b,
                   std::int64_t group, std::int64_t first, std::int64_t last, T* rows) {
    // Column q reads channels[planeOf[q] + rowAt[kyOf[q]] + columnAt[kxOf[q]]]; at a position
    // whose taps all read inside the image, channels[oy·stride·w + ox·stride + offsetOf[q]].
    std::vector<std::int64_t> planeOf, kyOf, kxOf, offsetOf;
    for (std::int64_t q = first; q < last; ++q) {
        const auto [channel, ky, kx] = g.tapAt(q);
        planeOf.push_back(channel * g.h * g.w);
        kyOf.push_back(ky);
        kxOf.push_back(kx);
        offsetOf.push_back(planeOf.back() + g.inputRow(0, kyOf.back()) * g.w +
                           g.inputColumn(0, kxOf.back()));
    }
    const T* channels = x + g.x(b, group * g.ci, 0, 0);
    const auto width = static_cast<std::int64_t>(planeOf.size());
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox, rows += width) {
            if (taps.whole(oy, ox)) {
                const std::int64_t at = oy * g.p.stride[0] * g.w + ox * g.p.stride[1];
                for (std::int64_t q = 0; q < width; ++q)
                    rows[q] = channels[at + offsetOf[static_cast<std::size_t>(q)]];
                continue;
            }
            const std::int64_t* rowAt = &taps.rowAt[oy * g.kh];
            const std::int64_t* columnAt = &taps.columnAt[ox * g.kw];
            for (std::size_t q = 0; q < planeOf.size(); ++q) {
                const std::int64_t r = rowAt[kyOf[q]], c = columnAt[kxOf[q]];
                rows[q] = r < 0 || c < 0 ? T(0) : channels[planeOf[q] + r + c];
            }
        }
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
    auto aStore = buffer<T>(m * k);
    auto cStore = buffer<T>(m * og);
    const TapTables taps = TapTables::forward(g);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        T* bm = typed<T>(bStore); // B[(ch,ky,kx)][j] = w[group·og + j, (ch,ky,kx)]
        for (std::int64_t j = 0; j < og; ++j)
            for (std::int64_t i = 0; i < k; ++i)
                bm[i * og + j] = w[(group * og + j) * k + i];
        const MatrixView bv = viewOf(bStore, dtype, k, og);
        const ColumnProbe probe = probeColumns(bv, options, random);
        for (std::int64_t b = 0; b < g.n; ++b) {
            im2col(x, g, taps, b, group, typed<T>(aStore));
            T* cm = typed<T>(cStore);
            for (std::int64_t j = 0; j < og; ++j) {
                const T* plane = y + g.out(b, group * og + j, 0, 0);
                for (std::int64_t pos = 0; pos < m; ++pos)
                    cm[pos * og + j] = plane[pos];
            }
            const MatrixView av = viewOf(aStore, dtype, m, k), cv = viewOf(cStore, dtype, m, og);
            const auto tile =
                decided(checkMatmulTileWithProbe(av, bv, cv, probe), av, bv, cv, greyZone);
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
    auto aStore = buffer<T>(m * k);
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
        for (std::int64_t b = 0; b < g.n; ++b) {
            T* row = typed<T>(aStore); // A[(iy,ix)][(j,ky,kx)] = dy[b, group·og + j, oy, ox] or 0
            const T* planes = dy + g.out(b, group * og, 0, 0);
            for (std::int64_t iy = 0; iy < g.h; ++iy)
                for (std::int64_t ix = 0; ix < g.w; ++ix)
                    for (std::int64_t j = 0; j < og; ++j)
                        row = gatherTaps(planes + j * g.oh * g.ow, &taps.rowAt[iy * g.kh],
                                         &taps.columnAt[ix * g.kw], g.kh, g.kw, taps.whole(iy, ix),
                                         row);
            T* cm = typed<T>(cStore);
            for (std::int64_t ch = 0; ch < g.ci; ++ch) {
                const T* plane = dx + g.x(b, group * g.ci + ch, 0, 0);
                for (std::int64_t pos = 0; pos < m; ++pos)
                    cm[pos * g.ci + ch] = plane[pos];
            }
            const MatrixView av = viewOf(aStore, dtype, m, k);
            const MatrixView cv = viewOf(cStore, dtype, m, g.ci);
            const auto tile =
                decided(checkMatmulTileWithProbe(av, bv, cv, probe), av, bv, cv, greyZone);
            if (!fold(tile, "group " + std::to_string(group) + " image " + std::to_string(b),
                      report))
                return report;
        }
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
        T* am = typed<T>(aStore); // A[j][(b,oy,ox)] = dy[b, group·og + j, oy, ox]
        for (std::int64_t j = 0; j < og; ++j)
            for (std::int64_t b = 0; b < g.n; ++b) {
                const T* plane = dy + g.out(b, group * og + j, 0, 0);
                std::copy(plane, plane + m, am + j * inner + b * m);
            }
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
