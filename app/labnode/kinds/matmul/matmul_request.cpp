#include "kinds/matmul/matmul_request.hpp"

#include "goblin/verify/matmul_check.hpp"

namespace goblin::labnode {

namespace json = boost::json;

Expected<void> checkMatmulShapes(core::DType aType, core::DType bType, const core::Shape& a,
                                 const core::Shape& b) {
    if (a.size() != 2 || b.size() != 2)
        return makeError(ErrorCode::ShapeMismatch, "A and B must be 2-D matrices");
    if (!core::isFloatingPoint(aType) || aType != bType)
        return makeError(ErrorCode::UnsupportedDtype,
                         "matmul takes A and B both f32 or both f64, got " +
                             std::string(core::wireName(aType)) + " and " +
                             std::string(core::wireName(bType)));
    if (a[1] != b[0])
        return makeError(ErrorCode::ShapeMismatch,
                         "inner sizes differ: A is " + std::to_string(a[0]) + "x" +
                             std::to_string(a[1]) + ", B is " + std::to_string(b[0]) + "x" +
                             std::to_string(b[1]));
    if (a[0] < 1 || a[1] < 1 || b[1] < 1)
        return makeError(ErrorCode::ShapeMismatch, "empty matrices are refused");
    return {};
}

Expected<std::string> storeFiniteInput(const char* name, const core::Tensor& input,
                                       const BlobStore& blobs) {
    if (auto bad = verify::findNonFinite(core::viewOf(input)))
        return makeError(ErrorCode::InvalidInput, std::string(name) + " holds NaN or Inf at (" +
                                                      std::to_string(bad->first) + ", " +
                                                      std::to_string(bad->second) +
                                                      "); verification needs finite inputs");
    return blobs.put(input);
}

json::array shapeJson(std::int64_t rows, std::int64_t cols) {
    return json::array{rows, cols};
}

json::object summaryJson(const JobRecord& job, const JobSummaryCounts& counts, double now) {
    json::object backends;
    for (const auto& [backend, count] : counts.backends)
        backends[backend] = count;
    return json::object{
        {"shape", shapeJson(job.m, job.n)},
        {"dtype", std::string(core::wireName(job.dtype))},
        {"tiles", counts.accepted},
        {"verdicts", json::object{{"accepted", counts.accepted}, {"rejected", counts.rejected}}},
        {"max_error_ratio", counts.maxBoundRatio},
        {"max_element_error_ratio", counts.maxErrorRatio},
        {"verification_seconds", counts.verifySeconds},
        {"seconds", (job.finishedAt > 0 ? job.finishedAt : now) - job.createdAt},
        {"volunteers", counts.volunteers},
        {"backends", std::move(backends)}};
}

} // namespace goblin::labnode
