// The OpenCL C++ bindings, included one way everywhere (versions come from goblin::opencl_options;
// exceptions stay off, so every call reports a status code).
#pragma once

#include <CL/opencl.hpp>
