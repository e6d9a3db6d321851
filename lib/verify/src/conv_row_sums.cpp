#include "conv_row_sums.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "goblin/core/cpu_clones.hpp"

namespace goblin::verify::detail {
namespace {

using Geometry = core::ops::Conv2dTaps;

// Four lanes of f64 (one AVX2 register): four neighbouring positions of one image row.
using Lanes = double __attribute__((vector_size(32)));
using LaneBits = std::uint64_t __attribute__((vector_size(32)));
constexpr std::int64_t kLanes = 4;
constexpr std::int64_t kChunk = 2 * kLanes; // positions per step

// The source planes (x's channels, or dy's for the input gradient) widened to f64, each row with
// `margin` zeros on both sides: a tap that falls outside the plane reads a zero, which adds
// nothing to either sum, exactly like the gathered A's zero.
struct PaddedPlanes {
    std::vector<double> values;
    std::int64_t rows = 0, margin = 0, stride = 0; // stride: one padded row

    PaddedPlanes(const float* planes, std::int64_t count, std::int64_t height, std::int64_t width,
                 std::int64_t padding)
        : rows(height), margin(padding), stride(width + 2 * padding) {
        values.assign(static_cast<std::size_t>(count * height * stride), 0.0);
        for (std::int64_t r = 0; r < count * height; ++r)
            for (std::int64_t c = 0; c < width; ++c)
                values[static_cast<std::size_t>(r * stride + margin + c)] =
                    static_cast<double>(planes[r * width + c]);
    }
    // Where column 0 of row `row` of plane `plane` sits.
    const double* row(std::int64_t plane, std::int64_t at) const {
        return values.data() + (plane * rows + at) * stride + margin;
    }
};

// The zeros a padded row needs on either side: a tap reads at most max(padding, (kw − 1)·dilation)
// before column 0 and, from the last chunk's last lane, at most that plus kChunk past the row's
// end (stride 1: ow = w + 2·padding − (kw − 1)·dilation).
std::int64_t marginOf(const Geometry& g) {
    return std::max(g.p.padding[1], (g.kw - 1) * g.p.dilation[1]) + kChunk;
}

// One row of the image a destination row reads: that source row's column 0 and the index of its
// first tap (kx = 0) among A's columns.
struct SourceRow {
    const double* values;
    std::int64_t tap;
};

inline void loadLanes(const double* source, Lanes& lanes) {
    std::memcpy(&lanes, source, sizeof lanes);
}

// The sums of one destination row for one block (kernels: 2 signed probes and the magnitude probe,
// each k long), kChunk positions at a time with every accumulator in a register:
// position x reads sources[i].values[x + shift[kx]] through tap sources[i].tap + kx.
// out[x · 3 + v].
GOBLIN_CPU_CLONES void rowBlockSums(const SourceRow* sources, std::int64_t sourceCount,
                                    const std::int64_t* shift, std::int64_t kw,
                                    const double* const* kernels, std::int64_t width, double* out) {
    const LaneBits noSign = ~LaneBits{} >> 1;
    for (std::int64_t x0 = 0; x0 < width; x0 += kChunk) {
        Lanes s0 = {}, s1 = {}, m0 = {}, t0 = {}, t1 = {}, n0 = {};
        for (std::int64_t i = 0; i < sourceCount; ++i) {
            const double* base = sources[i].values + x0;
            for (std::int64_t kx = 0; kx < kw; ++kx) {
                const std::int64_t tap = sources[i].tap + kx;
                Lanes low, high;
                loadLanes(base + shift[kx], low);
                loadLanes(base + shift[kx] + kLanes, high);
                const Lanes lowMagnitude =
                    reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(low) & noSign);
                const Lanes highMagnitude =
                    reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(high) & noSign);
                const double p0 = kernels[0][tap], p1 = kernels[1][tap], pm = kernels[2][tap];
                s0 += low * p0;
                s1 += low * p1;
                m0 += lowMagnitude * pm;
                t0 += high * p0;
                t1 += high * p1;
                n0 += highMagnitude * pm;
            }
        }
        for (std::int64_t lane = 0; lane < kLanes; ++lane) {
            if (x0 + lane < width) {
                double* at = out + (x0 + lane) * 3;
                at[0] = s0[lane];
                at[1] = s1[lane];
                at[2] = m0[lane];
            }
            if (x0 + kLanes + lane < width) {
                double* at = out + (x0 + kLanes + lane) * 3;
                at[0] = t0[lane];
                at[1] = t1[lane];
                at[2] = n0[lane];
            }
        }
    }
}

// The sums of every destination row (rows × width positions) against every block's kernels, each
// row's sources from `sourcesOf(row, list)`, into the layout of blockSums.
template <class SourcesOf>
BlockSums sumsOf(std::int64_t rows, std::int64_t width, const std::vector<std::int64_t>& shift,
                 std::int64_t kw, const std::vector<BlockKernels>& blocks,
                 const SourcesOf& sourcesOf) {
    const auto blockCount = static_cast<std::int64_t>(blocks.size());
    BlockSums sums;
    sums.sums.resize(static_cast<std::size_t>(rows * width * blockCount * 3));
    std::vector<SourceRow> sources;
    std::vector<double> out(static_cast<std::size_t>(width * 3));
    for (std::int64_t row = 0; row < rows; ++row) {
        sources.clear();
        sourcesOf(row, sources);
        for (std::int64_t block = 0; block < blockCount; ++block) {
            rowBlockSums(sources.data(), static_cast<std::int64_t>(sources.size()), shift.data(),
                         kw, blocks[static_cast<std::size_t>(block)].kernels, width, out.data());
            for (std::int64_t x = 0; x < width; ++x)
                std::copy_n(out.data() + x * 3, 3,
                            sums.sums.data() + ((row * width + x) * blockCount + block) * 3);
        }
    }
    return sums;
}

} // namespace

bool rowSumsApply(const Geometry& g, int vectors) {
    return vectors == 2 && g.p.stride[1] == 1;
}

std::vector<BlockKernels> rowSideKernels(const ColumnProbe& probe) {
    std::vector<BlockKernels> blocks;
    for (std::int64_t block = 0; block < probe.blocks(); ++block)
        blocks.push_back(
            {{probe.rowProbe(block, 0), probe.rowProbe(block, 1), probe.rowProbe(block, 2)}});
    return blocks;
}

BlockSums forwardRowSums(const float* channels, const Geometry& g,
                         const std::vector<BlockKernels>& blocks) {
    // Output column ox reads input column ox + kx·dilation − padding.
    std::vector<std::int64_t> shift;
    for (std::int64_t kx = 0; kx < g.kw; ++kx)
        shift.push_back(g.inputColumn(0, kx));
    const std::int64_t margin = marginOf(g);
    const PaddedPlanes planes(channels, g.ci, g.h, g.w, margin);
    return sumsOf(
        g.oh, g.ow, shift, g.kw, blocks, [&](std::int64_t oy, std::vector<SourceRow>& sources) {
            for (std::int64_t channel = 0; channel < g.ci; ++channel)
                for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                    const std::int64_t iy = g.inputRow(oy, ky);
                    if (g.insideRow(iy))
                        sources.push_back({planes.row(channel, iy), (channel * g.kh + ky) * g.kw});
                }
        });
}

BlockSums inputGradRowSums(const float* planes, const Geometry& g,
                           const std::vector<BlockKernels>& blocks) {
    // Input column ix is read by output column ix + padding − kx·dilation (stride 1).
    std::vector<std::int64_t> shift;
    for (std::int64_t kx = 0; kx < g.kw; ++kx)
        shift.push_back(-g.inputColumn(0, kx));
    const std::int64_t margin = marginOf(g);
    const PaddedPlanes padded(planes, g.outPerGroup(), g.oh, g.ow, margin);
    return sumsOf(g.h, g.w, shift, g.kw, blocks,
                  [&](std::int64_t iy, std::vector<SourceRow>& sources) {
                      for (std::int64_t j = 0; j < g.outPerGroup(); ++j)
                          for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                              const std::int64_t oy = g.outputRow(iy, ky);
                              if (oy >= 0)
                                  sources.push_back({padded.row(j, oy), (j * g.kh + ky) * g.kw});
                          }
                  });
}

ColumnProbe weightGradProbe(const float* x, std::int64_t group, const Geometry& g,
                            const MatmulCheckOptions& options, core::RandomSource& random) {
    const std::int64_t k = g.ci * g.kh * g.kw;
    // Σ_p |B_pq| for column q = (channel, ky, kx): each input row iy that tap ky brings to an
    // output row adds the part of it the kw taps read, from prefix sums of the row's magnitudes.
    std::vector<double> magnitudes(static_cast<std::size_t>(k), 0.0);
    std::vector<double> prefix(static_cast<std::size_t>(g.w + 1), 0.0);
    for (std::int64_t b = 0; b < g.n; ++b)
        for (std::int64_t channel = 0; channel < g.ci; ++channel)
            for (std::int64_t iy = 0; iy < g.h; ++iy) {
                const float* row = x + g.x(b, group * g.ci + channel, iy, 0);
                for (std::int64_t ix = 0; ix < g.w; ++ix)
                    prefix[static_cast<std::size_t>(ix + 1)] =
                        prefix[static_cast<std::size_t>(ix)] +
                        std::fabs(static_cast<double>(row[ix]));
                for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                    if (g.outputRow(iy, ky) < 0)
                        continue;
                    for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                        const std::int64_t shift = g.inputColumn(0, kx);
                        const std::int64_t first = std::clamp<std::int64_t>(shift, 0, g.w);
                        const std::int64_t end = std::clamp<std::int64_t>(shift + g.ow, 0, g.w);
                        if (end > first)
                            magnitudes[static_cast<std::size_t>((channel * g.kh + ky) * g.kw +
                                                                kx)] +=
                                prefix[static_cast<std::size_t>(end)] -
                                prefix[static_cast<std::size_t>(first)];
                    }
                }
            }
    // B's rows are every image's output positions: image by image, the conv2d sums of x against
    // each column-side block's probes as kernels (zero outside the block's columns).
    // Two signed vectors and the magnitudes: rowSumsApply (V = 2) gates every caller.
    const auto rowSumsOfB = [&](const std::vector<BlockProbes>& blocks, int vectors) {
        assert(vectors == 2);
        (void)vectors;
        std::vector<std::vector<double>> storage;
        std::vector<BlockKernels> kernels;
        for (const BlockProbes& block : blocks) {
            BlockKernels entry;
            const double* probes[3] = {block.signedProbes[0], block.signedProbes[1],
                                       block.magnitudeProbe};
            for (int v = 0; v < 3; ++v) {
                std::vector<double>& full = storage.emplace_back(static_cast<std::size_t>(k), 0.0);
                std::copy_n(probes[v], block.length, full.begin() + block.offset);
                entry.kernels[v] = full.data();
            }
            kernels.push_back(entry);
        }
        BlockSums all;
        for (std::int64_t b = 0; b < g.n; ++b) {
            const BlockSums image = forwardRowSums(x + g.x(b, group * g.ci, 0, 0), g, kernels);
            all.sums.insert(all.sums.end(), image.sums.begin(), image.sums.end());
        }
        return all;
    };
    return probeColumnsOf(core::DType::F32, g.n * g.oh * g.ow, std::move(magnitudes), rowSumsOfB,
                          options, random);
}

} // namespace goblin::verify::detail
