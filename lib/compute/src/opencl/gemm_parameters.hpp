// CLBlast's Xgemm parameter calls, with their status codes turned into goblin::Error. Private to
// the OpenCL backend; CLBlast guards its parameter tables itself, so any thread.
#pragma once

#include "cl_headers.hpp"
#include "goblin/compute/opencl_backend.hpp"

namespace goblin::compute::opencl {

[[nodiscard]] Expected<void> retrieveXgemmParameters(const cl::Device& device, core::DType dtype,
                                                     GemmParameters& out);
[[nodiscard]] Expected<void> overrideXgemmParameters(const cl::Device& device, core::DType dtype,
                                                     const GemmParameters& values);

} // namespace goblin::compute::opencl
