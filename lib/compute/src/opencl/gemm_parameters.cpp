#include "gemm_parameters.hpp"

#include <unordered_map>

#include <clblast.h>

#include "cl_error.hpp"

namespace goblin::compute::opencl {
namespace {

clblast::Precision precisionOf(core::DType dtype) {
    return dtype == core::DType::F64 ? clblast::Precision::kDouble : clblast::Precision::kSingle;
}

} // namespace

Expected<void> retrieveXgemmParameters(const cl::Device& device, core::DType dtype,
                                       GemmParameters& out) {
    std::unordered_map<std::string, std::size_t> values;
    const auto status = clblast::RetrieveParameters(device(), "Xgemm", precisionOf(dtype), values);
    if (status != clblast::StatusCode::kSuccess)
        return tl::unexpected(clblastError(status, "RetrieveParameters(Xgemm)"));
    out = GemmParameters(values.begin(), values.end());
    return {};
}

Expected<void> overrideXgemmParameters(const cl::Device& device, core::DType dtype,
                                       const GemmParameters& values) {
    const std::unordered_map<std::string, std::size_t> table(values.begin(), values.end());
    const auto status = clblast::OverrideParameters(device(), "Xgemm", precisionOf(dtype), table);
    if (status != clblast::StatusCode::kSuccess) {
        Error error = clblastError(status, "OverrideParameters(Xgemm)");
        error.code = ErrorCode::InvalidInput; // a parameter set CLBlast does not take
        return tl::unexpected(std::move(error));
    }
    return {};
}

} // namespace goblin::compute::opencl
