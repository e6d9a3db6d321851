// Private to goblin_reference: the canonical matrix product, C (m × n) = A (m × k) · B (k × n),
// each C[i][j] the sum over l = 0, 1, … k−1 of A[i][l]·B[l][j] in that order from 0, multiply then
// add in the dtype (the library builds with -ffp-contract=off: no FMA). However it is blocked,
// every element gets the bits of that sequential loop.
//
// B is never read in place: panelOf(l0, depth, j0, width, panel) writes B's rows l0 … l0+depth−1,
// columns j0 … j0+width−1 to panel[(l − l0)·kPanelColumns<T> + (j − j0)]. A matmul copies them
// from B; a convolution gathers its taps there (0 for a tap in the padding) without building the
// whole im2col matrix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace goblin::reference::detail {

// 32 bytes of lanes (GCC/Clang vector extensions; plain per-lane arithmetic, the same operations
// as the scalar loop, however the target lowers them).
typedef float FloatLanes __attribute__((vector_size(32)));
typedef double DoubleLanes __attribute__((vector_size(32)));
template <class T> struct LanesOf;
template <> struct LanesOf<float> { using Type = FloatLanes; };
template <> struct LanesOf<double> { using Type = DoubleLanes; };

// A panel is two lane-vectors of columns wide and kPanelDepth rows of B deep (64 KiB: a deeper
// panel, fewer round trips of C; 256 deep ran a 1024³ product 15 % slower).
template <class T> inline constexpr std::int64_t kPanelColumns = 2 * 32 / sizeof(T);
inline constexpr std::int64_t kPanelDepth = 1024;

// Where C is and whether the sums start from 0 or continue from C's values (a product split
// along k: continuing in the dtype from the stored partial sums gives the same bits).
template <class T> struct GemmOutput {
    T* c;
    std::int64_t ldc;
    bool fromZero = true;
};

namespace gemm {

// Rows rows of C by one panel, held in registers while l runs over the panel's depth.
template <class T, int Rows>
void accumulate(const T* a, std::int64_t lda, const T* panel, std::int64_t depth,
                typename LanesOf<T>::Type (&sums)[Rows][2]) {
    using Lanes = typename LanesOf<T>::Type;
    constexpr std::int64_t kLanes = sizeof(Lanes) / sizeof(T);
    for (std::int64_t l = 0; l < depth; ++l) {
        Lanes low, high;
        std::memcpy(&low, panel + l * 2 * kLanes, sizeof low);
        std::memcpy(&high, panel + l * 2 * kLanes + kLanes, sizeof high);
        for (int r = 0; r < Rows; ++r) {
            const T factor = a[r * lda + l];
            sums[r][0] = sums[r][0] + factor * low;
            sums[r][1] = sums[r][1] + factor * high;
        }
    }
}

// Rows rows of C's columns j0 … j0+width−1, continued over one panel (l0 … l0+depth−1).
template <class T, int Rows>
void rowsByPanel(const T* a, std::int64_t lda, const T* panel, std::int64_t depth,
                 const GemmOutput<T>& out, std::int64_t width) {
    using Lanes = typename LanesOf<T>::Type;
    Lanes sums[Rows][2] = {};
    if (width == kPanelColumns<T>) { // whole blocks: fixed-size copies, no call per row
        if (!out.fromZero)
            for (int r = 0; r < Rows; ++r)
                std::memcpy(sums[r], out.c + r * out.ldc, sizeof sums[r]);
        accumulate<T, Rows>(a, lda, panel, depth, sums);
        for (int r = 0; r < Rows; ++r)
            std::memcpy(out.c + r * out.ldc, sums[r], sizeof sums[r]);
        return;
    }
    T lanes[kPanelColumns<T>] = {};
    const auto bytes = static_cast<std::size_t>(width) * sizeof(T);
    if (!out.fromZero)
        for (int r = 0; r < Rows; ++r) {
            std::memcpy(lanes, out.c + r * out.ldc, bytes);
            std::memcpy(sums[r], lanes, sizeof sums[r]);
        }
    accumulate<T, Rows>(a, lda, panel, depth, sums);
    for (int r = 0; r < Rows; ++r) {
        std::memcpy(lanes, sums[r], sizeof sums[r]);
        std::memcpy(out.c + r * out.ldc, lanes, bytes);
    }
}

} // namespace gemm

// C = A·B (or C + A·B, continuing C's sums, when !out.fromZero): A row-major with leading
// dimension lda; 4 rows × 2 lane-vectors of C at a time over a contiguous panel of B, so each B
// element is read once per 4 rows of C, from cache. `panel` is the caller's workspace.
template <class T, class PanelOf>
void sequentialGemm(const T* a, std::int64_t lda, std::int64_t m, std::int64_t k, std::int64_t n,
                    PanelOf&& panelOf, const GemmOutput<T>& out, std::vector<T>& panel) {
    constexpr std::int64_t kRows = 4, kColumns = kPanelColumns<T>;
    if (k == 0 && out.fromZero)
        for (std::int64_t i = 0; i < m; ++i)
            std::fill(out.c + i * out.ldc, out.c + i * out.ldc + n, T(0));
    panel.resize(static_cast<std::size_t>(kPanelDepth * kColumns));
    for (std::int64_t j0 = 0; j0 < n; j0 += kColumns) {
        const std::int64_t width = std::min(kColumns, n - j0);
        for (std::int64_t l0 = 0; l0 < k; l0 += kPanelDepth) {
            const std::int64_t depth = std::min(kPanelDepth, k - l0);
            if (width < kColumns) // the lanes past the last column compute nothing kept
                std::fill(panel.begin(), panel.end(), T(0));
            panelOf(l0, depth, j0, width, panel.data());
            const bool fromZero = out.fromZero && l0 == 0;
            for (std::int64_t i0 = 0; i0 < m; i0 += kRows) {
                const GemmOutput<T> rows{out.c + i0 * out.ldc + j0, out.ldc, fromZero};
                const T* from = a + i0 * lda + l0;
                if (m - i0 >= kRows)
                    gemm::rowsByPanel<T, kRows>(from, lda, panel.data(), depth, rows, width);
                else
                    for (std::int64_t r = 0; r < m - i0; ++r)
                        gemm::rowsByPanel<T, 1>(from + r * lda, lda, panel.data(), depth,
                                                {rows.c + r * out.ldc, out.ldc, fromZero}, width);
            }
        }
    }
}

} // namespace goblin::reference::detail
