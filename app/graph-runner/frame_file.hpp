// Files of concatenated tensor frames (docs/protocol.md frames back to back, as
// python/goblin/wire.py writes them): the graph runner's inputs and outputs. Free functions; any
// thread.
#pragma once

#include <filesystem>
#include <span>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/core/tensor_frame.hpp"

namespace goblin::graph_runner {

// Splits bytes into frames and decodes each (every frame checked in full); an empty span holds
// none.
[[nodiscard]] Expected<std::vector<core::Tensor>> decodeFrames(std::span<const std::byte> bytes,
                                                               const core::FrameLimits& limits);

[[nodiscard]] Expected<std::vector<core::Tensor>> readFrameFile(const std::filesystem::path& path,
                                                                const core::FrameLimits& limits);
[[nodiscard]] Expected<void> writeFrameFile(const std::filesystem::path& path,
                                            std::span<const core::Tensor> tensors);

} // namespace goblin::graph_runner
