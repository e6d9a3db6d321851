// Builds the graph kernels' programs (goblin_math.h + tensor_index.cl + one family's .cl, embedded
// at build time) on first use and keeps them, and their kernels, for the executor's lifetime: one
// build per family and type configuration per device. Owned by one executor; its thread only.
#pragma once

#include <map>
#include <string>

#include "opencl/graph/graph_device.hpp"

namespace goblin::compute::opencl {

enum class KernelFamily { Elementwise, Reduce, Shape, Indexing, Layout, Window, Norm };

class ProgramCache {
public:
    explicit ProgramCache(const GraphDevice& device) : m_device(&device) {}

    // The kernel `name` of `family` built with `defines` ("-DT=float -DS=f32 …").
    [[nodiscard]] Expected<cl::Kernel> kernel(KernelFamily family, const std::string& defines,
                                              const std::string& name);

    // Programs built so far (for tests of the cache).
    [[nodiscard]] std::size_t builds() const { return m_programs.size(); }

private:
    [[nodiscard]] Expected<cl::Program> program(KernelFamily family, const std::string& defines);

    const GraphDevice* m_device;
    std::map<std::string, cl::Program> m_programs;
    std::map<std::string, cl::Kernel> m_kernels;
};

// -D defines of one dtype for the kernels: T (OpenCL type), S (goblin_math suffix), GM_IS_FLOAT.
std::string typeDefines(core::DType dtype, const char* typeMacro = "T",
                        const char* suffixMacro = "S");

} // namespace goblin::compute::opencl
