#include "goblin/compute/gemm_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "goblin/compute/eigen_cpu_backend.hpp"
#include "goblin_kernels/xgemm_candidates_txt.hpp"

namespace goblin::compute {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t at(const GemmParameters& p, const char* name) {
    const auto found = p.find(name);
    return found == p.end() ? 0 : found->second;
}

bool divides(std::size_t divisor, std::size_t value) {
    return divisor != 0 && value % divisor == 0;
}

// CLBlast's own constraints for Xgemm (src/tuning/kernels/xgemm.hpp), plus the device's limits.
bool valid(const GemmParameters& p, const OpenClDeviceInfo& device, core::DType dtype) {
    const std::size_t mwg = at(p, "MWG"), nwg = at(p, "NWG"), kwg = at(p, "KWG");
    const std::size_t mdimc = at(p, "MDIMC"), ndimc = at(p, "NDIMC");
    const std::size_t mdima = at(p, "MDIMA"), ndimb = at(p, "NDIMB");
    const std::size_t vwm = at(p, "VWM"), vwn = at(p, "VWN");
    const std::size_t threads = mdimc * ndimc;
    if (p.size() != 16 || threads == 0 || threads > device.maxWorkGroupSize)
        return false;
    if (!divides(mdimc * vwm, mwg) || !divides(ndimc * vwn, nwg) || !divides(mdima * vwm, mwg) ||
        !divides(ndimb * vwn, nwg) || !divides(mdima, threads) || !divides(ndimb, threads))
        return false;
    if (at(p, "GEMMK") == 0 && (!divides(threads / mdima, kwg) || !divides(threads / ndimb, kwg) ||
                                !divides(at(p, "KWI"), kwg) || at(p, "KREG") != 1))
        return false;
    const std::size_t localElements = at(p, "SA") * kwg * mwg + at(p, "SB") * kwg * nwg;
    return localElements * core::itemSize(dtype) <= device.localMemoryBytes;
}

GemmParameters gridPoint(std::size_t mwg, std::size_t nwg, std::size_t kwg, std::size_t mdim,
                         std::size_t ndim, std::size_t vwm, std::size_t vwn, std::size_t shared) {
    return GemmParameters{{"GEMMK", 0},    {"KREG", 1},     {"KWG", kwg},   {"KWI", 2},
                          {"MDIMA", mdim}, {"MDIMC", mdim}, {"MWG", mwg},   {"NDIMB", ndim},
                          {"NDIMC", ndim}, {"NWG", nwg},    {"SA", shared}, {"SB", shared},
                          {"STRM", 0},     {"STRN", 0},     {"VWM", vwm},   {"VWN", vwn}};
}

// Sets a backend's slice budget for a scope.
class SliceBudgetGuard {
public:
    SliceBudgetGuard(OpenClBackend& backend, double seconds)
        : m_backend(backend), m_saved(backend.sliceSeconds()) {
        backend.setSliceSeconds(seconds);
    }
    ~SliceBudgetGuard() { m_backend.setSliceSeconds(m_saved); }
    SliceBudgetGuard(const SliceBudgetGuard&) = delete;
    SliceBudgetGuard& operator=(const SliceBudgetGuard&) = delete;

private:
    OpenClBackend& m_backend;
    double m_saved;
};

// Random never-zero n×n matrices, the CPU product and |A|·|B| to judge a candidate's product.
struct Reference {
    core::Tensor a, b, product, magnitude;
    double factor = 0.0; // 2·(γ_n(u) + γ_n(2⁻⁵³)): both products round
};

core::Tensor randomMatrix(core::DType dtype, std::int64_t n, std::mt19937_64& random, bool abs) {
    auto tensor = core::Tensor::allocate(dtype, {n, n}).value();
    std::uniform_real_distribution<double> uniform(0.25, 1.0);
    for (std::int64_t i = 0; i < n * n; ++i) {
        const double value = (random() & 1) && !abs ? -uniform(random) : uniform(random);
        if (dtype == core::DType::F32)
            tensor.values<float>()[static_cast<std::size_t>(i)] = static_cast<float>(value);
        else
            tensor.values<double>()[static_cast<std::size_t>(i)] = value;
    }
    return tensor;
}

core::Tensor absolute(const core::Tensor& t) {
    core::Tensor out = core::Tensor::allocate(t.dtype(), t.shape()).value();
    for (std::int64_t i = 0; i < t.elementCount(); ++i) {
        const auto at = static_cast<std::size_t>(i);
        if (t.dtype() == core::DType::F32)
            out.values<float>()[at] = std::fabs(t.values<float>()[at]);
        else
            out.values<double>()[at] = std::fabs(t.values<double>()[at]);
    }
    return out;
}

Expected<Reference> makeReference(core::DType dtype, std::int64_t n) {
    std::mt19937_64 random(977);
    Reference reference;
    reference.a = randomMatrix(dtype, n, random, false);
    reference.b = randomMatrix(dtype, n, random, false);
    EigenCpuBackend cpu(CpuBackendOptions{});
    auto product = cpu.matmul(reference.a, reference.b);
    auto magnitude = cpu.matmul(absolute(reference.a), absolute(reference.b));
    if (!product || !magnitude)
        return tl::unexpected(!product ? product.error() : magnitude.error());
    reference.product = std::move(*product);
    reference.magnitude = std::move(*magnitude);
    const double u = dtype == core::DType::F32 ? 0x1p-24 : 0x1p-53;
    auto gamma = [n](double unit) { return double(n) * unit / (1.0 - double(n) * unit); };
    reference.factor = 2.0 * (gamma(u) + gamma(0x1p-53)) * 1.01; // 1% for the |A||B| rounding
    return reference;
}

template <class T> bool withinBound(const Reference& r, const core::Tensor& c) {
    const auto got = c.values<T>();
    const auto want = r.product.values<T>();
    const auto scale = r.magnitude.values<T>();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double error = std::fabs(double(got[i]) - double(want[i]));
        if (!(error <= r.factor * double(scale[i])))
            return false;
    }
    return true;
}

// The candidate's product of the reference inputs is within the bound.
bool computesRight(OpenClBackend& backend, const Reference& reference) {
    auto c = backend.matmul(reference.a, reference.b);
    if (!c)
        return false;
    return c->dtype() == core::DType::F32 ? withinBound<float>(reference, *c)
                                          : withinBound<double>(reference, *c);
}

} // namespace

std::string formatGemmParameters(const GemmParameters& parameters) {
    std::string text;
    for (const auto& [name, value] : parameters)
        text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
    return text;
}

Expected<GemmParameters> parseGemmParameters(const std::string& text) {
    GemmParameters parameters;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        const auto equals = word.find('=');
        const std::string name = word.substr(0, equals);
        const std::string digits = equals == std::string::npos ? "" : word.substr(equals + 1);
        const bool nameOk = !name.empty() && name.size() <= 16 &&
                            std::all_of(name.begin(), name.end(),
                                        [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; });
        const bool digitsOk =
            !digits.empty() && digits.size() <= 6 &&
            std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!nameOk || !digitsOk || !parameters.emplace(name, std::stoul(digits)).second)
            return makeError(ErrorCode::InvalidInput, "bad GEMM parameter '" + word + "'");
    }
    return parameters;
}

std::vector<GemmParameters> xgemmCandidates(const OpenClDeviceInfo& device, core::DType dtype) {
    std::vector<GemmParameters> candidates;
    std::istringstream lines{std::string(kernels::kXgemmCandidatesSource)};
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        auto parsed = parseGemmParameters(line);
        if (parsed && valid(*parsed, device, dtype))
            candidates.push_back(std::move(*parsed));
    }
    std::vector<GemmParameters> grid;
    for (std::size_t mwg : {32, 64, 128})
        for (std::size_t nwg : {32, 64, 128})
            for (std::size_t kwg : {16, 32})
                for (std::size_t mdim : {8, 16})
                    for (std::size_t ndim : {8, 16})
                        for (std::size_t vwm : {1, 2, 4, 8})
                            for (std::size_t vwn : {1, 2, 4, 8})
                                for (std::size_t shared : {0, 1}) {
                                    auto point =
                                        gridPoint(mwg, nwg, kwg, mdim, ndim, vwm, vwn, shared);
                                    if (valid(point, device, dtype))
                                        grid.push_back(std::move(point));
                                }
    // A fixed shuffle: every device tries the grid in the same, well-spread order.
    std::shuffle(grid.begin(), grid.end(), std::mt19937_64(20240601));
    candidates.insert(candidates.end(), grid.begin(), grid.end());
    return candidates;
}

Expected<CalibrationResult> calibrateGemm(OpenClBackend& backend, core::DType dtype,
                                          const CalibrationOptions& options) {
    const auto started = Clock::now();
    const double flops = 2.0 * std::pow(static_cast<double>(options.size), 3);
    auto say = [&](const std::string& line) {
        if (options.progress)
            options.progress(line);
    };
    CalibrationResult result;
    result.dtype = dtype;
    if (auto reset = backend.setGemmParameters(dtype, {}); !reset)
        return tl::unexpected(reset.error());
    auto reference = makeReference(dtype, options.size);
    if (!reference)
        return tl::unexpected(reference.error());
    // One slice per product, so the check runs the very kernel being timed.
    const SliceBudgetGuard unsliced(backend, 1e9);
    auto baseline = backend.timeGemm(dtype, options.size, 2);
    if (!baseline)
        return tl::unexpected(baseline.error());
    result.defaultGflops = result.bestGflops = flops / *baseline / 1e9;
    char first[96];
    std::snprintf(first, sizeof first, "CLBlast's own parameters: %.1f GFLOP/s",
                  result.defaultGflops);
    say(first);
    const auto candidates =
        options.candidates.empty() ? xgemmCandidates(backend.device(), dtype) : options.candidates;
    for (const auto& candidate : candidates) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
        if (elapsed > options.timeLimitSeconds)
            break;
        ++result.tried;
        const auto set = backend.setGemmParameters(dtype, candidate);
        const Expected<double> seconds = set ? backend.timeGemm(dtype, options.size, 1)
                                             : Expected<double>(tl::unexpected(set.error()));
        char line[160];
        if (!seconds) {
            ++result.failed;
            std::snprintf(line, sizeof line, "[%3.0f s] %d/%zu refused by the device", elapsed,
                          result.tried, candidates.size());
            say(line);
            continue;
        }
        const double gflops = flops / *seconds / 1e9;
        if (!computesRight(backend, *reference)) {
            ++result.wrong;
            std::snprintf(line, sizeof line,
                          "[%3.0f s] %d/%zu %.1f GFLOP/s but WRONG products: "
                          "discarded",
                          elapsed, result.tried, candidates.size(), gflops);
            say(line);
            continue;
        }
        if (gflops > result.bestGflops) {
            result.bestGflops = gflops;
            result.best = candidate;
        }
        std::snprintf(line, sizeof line, "[%3.0f s] %d/%zu %.1f GFLOP/s (best %.1f)", elapsed,
                      result.tried, candidates.size(), gflops, result.bestGflops);
        say(line);
    }
    if (auto applied = backend.setGemmParameters(dtype, result.best); !applied)
        return tl::unexpected(applied.error());
    return result;
}

} // namespace goblin::compute
