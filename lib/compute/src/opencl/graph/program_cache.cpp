#include "opencl/graph/program_cache.hpp"

#include <cctype>

#include "goblin_kernels/elementwise_cl.hpp"
#include "goblin_kernels/goblin_math_h.hpp"
#include "goblin_kernels/indexing_cl.hpp"
#include "goblin_kernels/layout_cl.hpp"
#include "goblin_kernels/norm_cl.hpp"
#include "goblin_kernels/philox_h.hpp"
#include "goblin_kernels/reduce_cl.hpp"
#include "goblin_kernels/shape_cl.hpp"
#include "goblin_kernels/tensor_index_cl.hpp"
#include "goblin_kernels/window_cl.hpp"
#include "opencl/cl_error.hpp"

namespace goblin::compute::opencl {
namespace {

std::string_view familySource(KernelFamily family) {
    switch (family) {
    case KernelFamily::Elementwise:
        return kernels::kElementwiseSource;
    case KernelFamily::Reduce:
        return kernels::kReduceSource;
    case KernelFamily::Shape:
        return kernels::kShapeSource;
    case KernelFamily::Indexing:
        return kernels::kIndexingSource;
    case KernelFamily::Layout:
        return kernels::kLayoutSource;
    case KernelFamily::Window:
        return kernels::kWindowSource;
    case KernelFamily::Norm:
        return kernels::kNormSource;
    }
    return {};
}

// "#define OP_FLOOR_DIVIDE 7" for every op: the kernels name ops as the OpCode values.
std::string opDefines() {
    std::string text;
    for (int code = 0; code < core::ops::kOpCount; ++code) {
        std::string name(core::ops::opInfo(static_cast<core::ops::OpCode>(code)).name);
        for (char& c : name)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        text += "#define OP_" + name + " " + std::to_string(code) + "\n";
    }
    return text;
}

} // namespace

std::string typeDefines(core::DType dtype, const char* typeMacro, const char* suffixMacro) {
    const char* type = "uchar";
    const char* suffix = "b8";
    switch (dtype) {
    case core::DType::F32:
        type = "float", suffix = "f32";
        break;
    case core::DType::F64:
        type = "double", suffix = "f64";
        break;
    case core::DType::I32:
        type = "int", suffix = "i32";
        break;
    case core::DType::I64:
        type = "long", suffix = "i64";
        break;
    case core::DType::Bool:
        break;
    }
    std::string defines =
        std::string(" -D") + typeMacro + "=" + type + " -D" + suffixMacro + "=" + suffix;
    if (core::isFloatingPoint(dtype))
        defines += " -DGM_IS_FLOAT";
    return defines;
}

Expected<cl::Program> ProgramCache::program(KernelFamily family, const std::string& defines) {
    const std::string key = std::to_string(static_cast<int>(family)) + defines;
    if (auto found = m_programs.find(key); found != m_programs.end())
        return found->second;
    std::string source = opDefines();
    if (m_device->info.fp64)
        source += "#define GM_FP64\n";
    source += kernels::kGoblinMathSource;
    source += kernels::kTensorIndexSource;
    if (family == KernelFamily::Layout)
        source += kernels::kPhiloxSource;
    source += familySource(family);
    cl_int status = CL_SUCCESS;
    cl::Program program(m_device->context, source, false, &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateProgramWithSource(graph kernels)"));
    std::string options = defines;
    if (m_device->exactF32)
        options += " -cl-fp32-correctly-rounded-divide-sqrt";
    status = program.build(std::vector<cl::Device>{m_device->device}, options.c_str());
    if (status != CL_SUCCESS) {
        Error error = clError(status, "building graph kernels (" + options + ")");
        error.message +=
            ": " + program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(m_device->device).substr(0, 2000);
        return tl::unexpected(std::move(error));
    }
    m_programs.emplace(key, program);
    return program;
}

Expected<cl::Kernel> ProgramCache::kernel(KernelFamily family, const std::string& defines,
                                          const std::string& name) {
    const std::string key = std::to_string(static_cast<int>(family)) + defines + "/" + name;
    if (auto found = m_kernels.find(key); found != m_kernels.end())
        return found->second;
    auto built = program(family, defines);
    if (!built)
        return tl::unexpected(built.error());
    cl_int status = CL_SUCCESS;
    cl::Kernel kernel(*built, name.c_str(), &status);
    if (status != CL_SUCCESS)
        return tl::unexpected(clError(status, "clCreateKernel(" + name + ")"));
    m_kernels.emplace(key, kernel);
    return kernel;
}

} // namespace goblin::compute::opencl
