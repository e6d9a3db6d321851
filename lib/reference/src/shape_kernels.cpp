// Reference kernels of cast, reshape, permute, expand and batched matmul.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels.hpp"
#include "scalar_math.hpp"
#include "sequential_gemm.hpp"

namespace goblin::reference::detail {
namespace {

// Float → integer: truncation toward zero; NaN → 0; out-of-range values saturate (PyTorch leaves
// these undefined; docs/ops.md defines them). Integer → narrower integer wraps.
template <class To, class From> To convert(From value) {
    if constexpr (std::is_same_v<To, bool>) {
        return value != From{0};
    } else if constexpr (std::is_floating_point_v<From> && kIsInt<To>) {
        if (std::isnan(value))
            return 0;
        if (value <= static_cast<From>(std::numeric_limits<To>::min()))
            return std::numeric_limits<To>::min();
        if (value >= static_cast<From>(std::numeric_limits<To>::max()))
            return std::numeric_limits<To>::max();
        return static_cast<To>(value);
    } else {
        return static_cast<To>(value);
    }
}

void cast(const Tensor& x, Tensor& out) {
    visitDType(x.dtype(), [&](auto from) {
        using From = decltype(from);
        visitDType(out.dtype(), [&](auto to) {
            using To = decltype(to);
            const auto in = x.values<From>();
            for (std::size_t i = 0; i < in.size(); ++i)
                out.values<To>()[i] = convert<To>(in[i]);
        });
    });
}

// Copies the output row by row: row r starts at element walk.rowStarts[r] of x and steps
// walk.step elements along it (0 where x broadcasts), walk.width elements per row. Elements of
// `Size` bytes move by memcpy, so none is read through a pointer of another type; a fixed-size
// memcpy compiles to one load and one store. A strided walk (a transpose: neighbouring rows start
// at neighbouring elements) goes in tiles of rows × columns, so a cache line read for one row
// serves the next rows too, and 4-byte elements of eight such rows move as 8 × 8 blocks
// transposed in registers; only the order of the copies changes, never a value.
#if defined(__AVX2__)
// Whether output rows r … r+7 start at eight neighbouring elements of x (a transpose's rows do):
// then the 8 × 8 blocks of those rows are 8 × 8 blocks of x, read 8 elements at a time.
bool neighbouringRows(const RowWalk& walk, std::size_t r) {
    if (r + 8 > walk.rowStarts.size())
        return false;
    for (std::size_t a = 1; a < 8; ++a)
        if (walk.rowStarts[r + a] != walk.rowStarts[r] + static_cast<std::int64_t>(a))
            return false;
    return true;
}

// Output rows r … r+7 (neighbouringRows), columns [0, width − width % 8), of 4-byte elements: each
// 8 × 8 block loaded as eight rows of x, transposed in registers, stored as eight output rows.
void transposeEightRows(const std::byte* in, const RowWalk& walk, std::size_t r, std::byte* out) {
    const auto width = static_cast<std::size_t>(walk.width);
    const auto step = static_cast<std::size_t>(walk.step);
    const auto* from = reinterpret_cast<const float*>(in) + walk.rowStarts[r];
    for (std::size_t j = 0; j + 8 <= width; j += 8) {
        __m256 v[8];
        for (std::size_t b = 0; b < 8; ++b)
            v[b] = _mm256_loadu_ps(from + (j + b) * step);
        const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
        const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
        const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
        const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
        const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
        const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
        const __m256 rows[8] = {
            _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
            _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
            _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
            _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
        for (std::size_t a = 0; a < 8; ++a)
            _mm256_storeu_ps(reinterpret_cast<float*>(out + ((r + a) * width + j) * 4), rows[a]);
    }
}
#endif

template <std::size_t Size>
void copyWalk(const std::byte* in, const RowWalk& walk, std::byte* out) {
    const auto width = static_cast<std::size_t>(walk.width);
    if (walk.step == 1) {
        for (std::int64_t start : walk.rowStarts) {
            std::memcpy(out, in + static_cast<std::size_t>(start) * Size, width * Size);
            out += width * Size;
        }
        return;
    }
    constexpr std::size_t kTileRows = 16;
    constexpr std::size_t kTileColumns = 32;
    const auto step = static_cast<std::size_t>(walk.step) * Size;
    const std::size_t rows = walk.rowStarts.size();
    for (std::size_t r0 = 0; r0 < rows; r0 += kTileRows) {
        const std::size_t r1 = std::min(rows, r0 + kTileRows);
        // Columns before `done` of a row are already copied (by whole 8 × 8 blocks).
        std::size_t done[kTileRows] = {};
#if defined(__AVX2__)
        if constexpr (Size == 4)
            for (std::size_t r = r0; r + 8 <= r1; r += 8)
                if (walk.step != 0 && neighbouringRows(walk, r)) {
                    transposeEightRows(in, walk, r, out);
                    std::fill_n(done + (r - r0), 8, width - width % 8);
                }
#endif
        for (std::size_t j0 = 0; j0 < width; j0 += kTileColumns) {
            const std::size_t j1 = std::min(width, j0 + kTileColumns);
            for (std::size_t r = r0; r < r1; ++r) {
                const std::byte* row = in + static_cast<std::size_t>(walk.rowStarts[r]) * Size;
                std::byte* to = out + r * width * Size;
                for (std::size_t j = std::max(j0, done[r - r0]); j < j1; ++j)
                    std::memcpy(to + j * Size, row + j * step, Size);
            }
        }
    }
}

void gatherRows(const Tensor& x, const RowWalk& walk, Tensor& out) {
    const std::byte* in = x.bytes().data();
    std::byte* to = out.bytes().data();
    switch (core::itemSize(x.dtype())) {
    case 1:
        return copyWalk<1>(in, walk, to);
    case 4:
        return copyWalk<4>(in, walk, to);
    default:
        return copyWalk<8>(in, walk, to);
    }
}

// The rows of a permute's output: every dim but the last in the new order, then the input's stride
// along the dim that comes last.
RowWalk permuteWalk(const Shape& shape, const core::ops::IntList& dims) {
    if (shape.empty())
        return RowWalk{{0}, 0, 1};
    const std::vector<std::int64_t> strides = stridesOf(shape);
    std::vector<std::size_t> order;
    for (std::int64_t raw : dims)
        order.push_back(static_cast<std::size_t>(
            raw < 0 ? raw + static_cast<std::int64_t>(shape.size()) : raw));
    const std::size_t last = order.back();
    order.pop_back();
    return RowWalk{offsetsAlong(shape, strides, order), strides[last], shape[last]};
}

// One integer matrix product C (m × n) = A (m × k) · B (k × n), row-major, each C[i][j] the
// wrapping sum over l = 0, 1, … k−1 in order from 0 (floats go through sequentialGemm, which
// gives the bits of this loop).
template <class T>
void integerMatmul(const T* pa, const T* pb, T* pc, std::int64_t m, std::int64_t k,
                   std::int64_t n) {
    // l outer and j inner: B is read along its rows and the j loop vectorises.
    for (std::int64_t i = 0; i < m; ++i) {
        T* row = pc + i * n;
        std::fill(row, row + n, T{0});
        for (std::int64_t l = 0; l < k; ++l) {
            const T factor = pa[i * k + l];
            const T* bRow = pb + l * n;
            for (std::int64_t j = 0; j < n; ++j)
                row[j] = wrapAdd(row[j], wrapMul(factor, bRow[j]));
        }
    }
}

// C[b] = A[b]·B[b] with broadcast batch dims; k accumulated sequentially in the dtype.
template <class T> void matmul(const Tensor& a, const Tensor& b, Tensor& out) {
    const Shape& sa = a.shape();
    const Shape& sb = b.shape();
    const std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
    const Shape batch(out.shape().begin(), out.shape().end() - 2);
    const auto batchA = broadcastOffsets(Shape(sa.begin(), sa.end() - 2), batch);
    const auto batchB = broadcastOffsets(Shape(sb.begin(), sb.end() - 2), batch);
    const auto va = a.values<T>();
    const auto vb = b.values<T>();
    auto vc = out.values<T>();
    std::vector<T> panel;
    for (std::size_t p = 0; p < batchA.size(); ++p) {
        const T* pa = va.data() + batchA[p] * m * k;
        const T* pb = vb.data() + batchB[p] * k * n;
        T* pc = vc.data() + static_cast<std::int64_t>(p) * m * n;
        if constexpr (std::is_floating_point_v<T>)
            sequentialGemm(
                pa, k, m, k, n,
                [pb, n](std::int64_t l0, std::int64_t depth, std::int64_t j0, std::int64_t width,
                        T* to) {
                    constexpr std::int64_t kWhole = kPanelColumns<T>;
                    for (std::int64_t l = l0; l < l0 + depth; ++l, to += kWhole)
                        if (width == kWhole) // a fixed-size copy, inlined
                            std::copy_n(pb + l * n + j0, kWhole, to);
                        else
                            std::copy_n(pb + l * n + j0, width, to);
                },
                GemmOutput<T>{pc, n}, panel);
        else
            integerMatmul(pa, pb, pc, m, k, n);
    }
}

} // namespace

Expected<Tensor> runShapeOp(OpCode op, Args args, const Attributes& attrs, const TensorSpec& spec) {
    const Tensor& x = args[0];
    if (op == OpCode::Reshape) // C order is kept: the same storage under the new shape
        return x.withShape(spec.shape);
    auto out = Tensor::allocate(spec.dtype, spec.shape);
    if (!out)
        return out;
    switch (op) {
    case OpCode::Cast:
        cast(x, *out);
        break;
    case OpCode::Permute:
        gatherRows(
            x, permuteWalk(x.shape(), core::ops::attrIntList(attrs, "dims", std::nullopt).value()),
            *out);
        break;
    case OpCode::Expand:
        gatherRows(x, broadcastWalk(x.shape(), spec.shape), *out);
        break;
    default:
        visitDType(x.dtype(), [&](auto t) {
            if constexpr (!std::is_same_v<decltype(t), bool>)
                matmul<decltype(t)>(x, args[1], *out);
        });
        break;
    }
    return out;
}

} // namespace goblin::reference::detail
