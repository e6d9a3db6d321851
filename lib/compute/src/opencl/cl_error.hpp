// The one place OpenCL and CLBlast status codes become goblin::Error (STYLE.md rule 11).
// Plain functions; safe on any thread.
#pragma once

#include <string_view>

#include <CL/cl.h>
#include <clblast.h>

#include "goblin/core/error.hpp"

namespace goblin::compute::opencl {

// "CL_OUT_OF_RESOURCES" for -5, "CL_ERROR(-77)" for an unknown code.
std::string_view clStatusName(cl_int status);

// Internal error: "<what>: CL_… (<code>)".
[[nodiscard]] Error clError(cl_int status, std::string_view what);

// kNoDoublePrecision → UnsupportedDtype; anything else → Internal.
[[nodiscard]] Error clblastError(clblast::StatusCode status, std::string_view what);

} // namespace goblin::compute::opencl
