// The binary tensor frame of docs/protocol.md: u64 LE header length, JSON header, zero padding to a
// multiple of 64, raw little-endian C-order elements. Pure functions; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"

namespace goblin::core {

inline constexpr std::size_t kFrameAlignment = 64;
inline constexpr std::size_t kMaxFrameHeaderBytes = 4096;

struct FrameLimits {
    std::size_t maxTensorBytes = std::size_t{1} << 30;
};

// CRC-32 (zlib / IEEE) of a byte range.
std::uint32_t crc32(std::span<const std::byte> bytes);

// The part of the frame before the elements: length, JSON header, padding. Sending this followed by
// tensor.bytes() gives the whole frame without copying the elements.
std::vector<std::byte> encodeTensorFramePrefix(const Tensor& tensor);
// The whole frame in one buffer (prefix + elements).
std::vector<std::byte> encodeTensorFrame(const Tensor& tensor);

// Validates everything (sizes, header, dtype, shape, byte length, checksum) before allocating.
Expected<Tensor> decodeTensorFrame(std::span<const std::byte> frame, const FrameLimits& limits);

} // namespace goblin::core
