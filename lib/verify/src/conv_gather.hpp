// The gathered matmul operands of a convolution (conv_check.hpp): im2col(x) for conv2d and its
// weight gradient, the taps of dy for the input gradient, zero where a tap falls in the padding.
// The check builds them only where it needs A itself (f64 tiles, a grey-zone tile's exact check)
// or B (the weight gradient). Private to goblin_verify. Pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "goblin/core/ops/op_geometry.hpp"

namespace goblin::verify::detail {

using Geometry = core::ops::Conv2dTaps;

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

} // namespace goblin::verify::detail
