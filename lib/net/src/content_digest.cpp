#include "goblin/net/content_digest.hpp"

#include <memory>
#include <new>

#include <openssl/evp.h>

namespace goblin::net {

namespace {

std::string hexOf(const unsigned char* digest, unsigned int length) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * length);
    for (unsigned int i = 0; i < length; ++i) {
        hex.push_back(kHex[digest[i] >> 4]);
        hex.push_back(kHex[digest[i] & 15]);
    }
    return hex;
}

} // namespace

std::string sha256Hex(std::span<const std::byte> bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
    return hexOf(digest, length);
}

Sha256Stream::Sha256Stream() : m_context(EVP_MD_CTX_new()) {
    if (!m_context ||
        EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(m_context), EVP_sha256(), nullptr) != 1)
        throw std::bad_alloc();
}

Sha256Stream::~Sha256Stream() {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_context));
}

void Sha256Stream::update(std::span<const std::byte> bytes) {
    EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_context), bytes.data(), bytes.size());
}

std::string Sha256Stream::finishHex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(m_context), digest, &length);
    return hexOf(digest, length);
}

std::string tensorDigest(const core::Tensor& tensor) {
    // "dtype:d0,d1,…:" then the bytes: the header makes a reshaped copy a different value.
    std::string header(core::wireName(tensor.dtype()));
    header.push_back(':');
    for (std::int64_t dim : tensor.shape()) {
        header.append(std::to_string(dim));
        header.push_back(',');
    }
    header.push_back(':');
    const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                          &EVP_MD_CTX_free);
    if (!context)
        throw std::bad_alloc();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
    EVP_DigestUpdate(context.get(), header.data(), header.size());
    EVP_DigestUpdate(context.get(), tensor.bytes().data(), tensor.byteSize());
    EVP_DigestFinal_ex(context.get(), digest, &length);
    return hexOf(digest, length);
}

bool isDigestHex(std::string_view text) {
    if (text.size() != kDigestHexLength)
        return false;
    for (char c : text)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

} // namespace goblin::net
