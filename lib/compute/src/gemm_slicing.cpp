#include "goblin/compute/gemm_slicing.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

namespace goblin::compute {
namespace {

std::string mib(std::uint64_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

std::int64_t clampToRange(double value, std::int64_t low, std::int64_t high) {
    if (!(value >= static_cast<double>(low)))
        return low;
    if (value >= static_cast<double>(high))
        return high;
    return static_cast<std::int64_t>(value);
}

} // namespace

Expected<void> checkGemmFits(const DeviceMemoryLimits& limits, core::DType dtype, std::int64_t m,
                             std::int64_t k, std::int64_t n) {
    assert(m >= 0 && k >= 0 && n >= 0 && "checkGemmFits takes non-negative sizes");
    const auto item = static_cast<long double>(core::itemSize(dtype));
    // long double: m·k·item can pass 2^64 for hostile shapes; the comparison stays exact enough.
    const long double a = static_cast<long double>(m) * static_cast<long double>(k) * item;
    const long double b = static_cast<long double>(k) * static_cast<long double>(n) * item;
    const long double c = static_cast<long double>(m) * static_cast<long double>(n) * item;
    const long double largest = std::max({a, b, c});
    if (largest > static_cast<long double>(limits.maxAllocBytes))
        return makeError(
            ErrorCode::LimitExceeded,
            "a " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                " product needs a buffer of " +
                mib(static_cast<std::uint64_t>(std::min<long double>(largest, 1e19L))) +
                ", over the device's largest allocation of " + mib(limits.maxAllocBytes));
    const long double total = 2 * (a + b + c);
    if (total > static_cast<long double>(limits.globalBytes))
        return makeError(ErrorCode::LimitExceeded,
                         "a " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                             std::to_string(n) + " product needs about " +
                             mib(static_cast<std::uint64_t>(total)) +
                             " of device memory, over the device's " + mib(limits.globalBytes));
    return {};
}

std::vector<GemmSlice> planGemmSlices(std::int64_t m, std::int64_t k, std::int64_t n,
                                      const SlicePolicy& policy) {
    std::vector<GemmSlice> slices;
    if (m <= 0 || k <= 0 || n <= 0)
        return slices;
    const double budgetFlops = std::max(0.0, policy.flopsPerSecond * policy.budgetSeconds);
    const double rowFlops = 2.0 * static_cast<double>(n); // per row and per unit of depth
    const std::int64_t minDepth = std::min(k, std::max<std::int64_t>(1, policy.minDepth));
    const std::int64_t minRows = std::min(m, std::max<std::int64_t>(1, policy.minRows));
    // All rows at once, as deep as the budget allows; only when even minDepth is too much for all
    // rows do the rows get cut too.
    std::int64_t depth = clampToRange(budgetFlops / (rowFlops * static_cast<double>(m)), 0, k);
    std::int64_t rows = m;
    if (depth < minDepth) {
        depth = minDepth;
        rows = clampToRange(budgetFlops / (rowFlops * static_cast<double>(depth)), minRows, m);
    }
    for (std::int64_t row0 = 0; row0 < m; row0 += rows) {
        const std::int64_t blockRows = std::min(rows, m - row0);
        for (std::int64_t k0 = 0; k0 < k; k0 += depth)
            slices.push_back(GemmSlice{row0, blockRows, k0, std::min(depth, k - k0)});
    }
    return slices;
}

} // namespace goblin::compute
