// Content addresses: SHA-256 as lowercase hex, of bytes or of a tensor (its dtype, shape and
// bytes, so two tensors share a digest only when they are the same value). The node names a task
// input a volunteer already holds by its tensor digest (docs/protocol.md, "Inputs by digest").
// Pure functions; safe on any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "goblin/core/tensor.hpp"

namespace goblin::net {

inline constexpr std::size_t kDigestHexLength = 64;

std::string sha256Hex(std::span<const std::byte> bytes);

// sha256Hex of bytes that come in pieces, in order (an upload written block by block). One
// thread at a time.
class Sha256Stream {
public:
    Sha256Stream();
    ~Sha256Stream();
    Sha256Stream(const Sha256Stream&) = delete;
    Sha256Stream& operator=(const Sha256Stream&) = delete;
    void update(std::span<const std::byte> bytes);
    std::string finishHex(); // once
private:
    void* m_context; // EVP_MD_CTX
};
std::string tensorDigest(const core::Tensor& tensor);
// 64 lowercase hex digits.
bool isDigestHex(std::string_view text);

} // namespace goblin::net
