#include "frame_file.hpp"

#include <fstream>
#include <iterator>
#include <string>

#include <boost/json.hpp>

namespace goblin::graph_runner {
namespace {

namespace json = boost::json;

// Length of the frame that starts at bytes[0], read from its header's "nbytes"; the frame decoder
// checks everything else (and this length against the shape) afterwards.
Expected<std::size_t> frameLength(std::span<const std::byte> bytes) {
    if (bytes.size() < 8)
        return makeError(ErrorCode::InvalidFrame, "frame file ends inside a frame's length field");
    std::uint64_t headerLength = 0;
    for (std::size_t i = 8; i-- > 0;)
        headerLength = (headerLength << 8) | std::to_integer<std::uint64_t>(bytes[i]);
    if (headerLength == 0 || headerLength > core::kMaxFrameHeaderBytes ||
        bytes.size() < 8 + headerLength)
        return makeError(ErrorCode::InvalidFrame,
                         "frame header length is out of range or truncated");
    json::error_code ec;
    const json::value header = json::parse(
        std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), headerLength), ec);
    const json::value* nbytes =
        !ec && header.is_object() ? header.as_object().if_contains("nbytes") : nullptr;
    if (!nbytes || !(nbytes->is_int64() || nbytes->is_uint64()))
        return makeError(ErrorCode::InvalidFrame, "frame header has no integer nbytes");
    const auto elements = nbytes->to_number<std::uint64_t>();
    const std::size_t offset = (8 + headerLength + core::kFrameAlignment - 1) /
                               core::kFrameAlignment * core::kFrameAlignment;
    if (elements > bytes.size() || offset > bytes.size() - elements)
        return makeError(ErrorCode::InvalidFrame, "frame file ends inside a frame");
    return offset + elements;
}

} // namespace

Expected<std::vector<core::Tensor>> decodeFrames(std::span<const std::byte> bytes,
                                                 const core::FrameLimits& limits) {
    std::vector<core::Tensor> tensors;
    while (!bytes.empty()) {
        auto length = frameLength(bytes);
        if (!length)
            return tl::unexpected(length.error());
        auto tensor = core::decodeTensorFrame(bytes.first(*length), limits);
        if (!tensor)
            return tl::unexpected(tensor.error());
        tensors.push_back(std::move(*tensor));
        bytes = bytes.subspan(*length);
    }
    return tensors;
}

Expected<std::vector<core::Tensor>> readFrameFile(const std::filesystem::path& path,
                                                  const core::FrameLimits& limits) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
        return makeError(ErrorCode::NotFound, "cannot open " + path.string());
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file),
                                  std::istreambuf_iterator<char>()};
    return decodeFrames(std::as_bytes(std::span(bytes)), limits);
}

Expected<void> writeFrameFile(const std::filesystem::path& path,
                              std::span<const core::Tensor> tensors) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    for (const core::Tensor& tensor : tensors) {
        const auto prefix = core::encodeTensorFramePrefix(tensor);
        file.write(reinterpret_cast<const char*>(prefix.data()),
                   static_cast<std::streamsize>(prefix.size()));
        file.write(reinterpret_cast<const char*>(tensor.bytes().data()),
                   static_cast<std::streamsize>(tensor.byteSize()));
    }
    file.close();
    if (!file)
        return makeError(ErrorCode::Internal, "cannot write " + path.string());
    return {};
}

} // namespace goblin::graph_runner
