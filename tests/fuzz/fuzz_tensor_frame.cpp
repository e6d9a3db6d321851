// Fuzz target: decodeTensorFrame must reject or decode any byte string without crashing, and a
// decoded tensor must re-encode to the same frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "goblin/core/tensor_frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(data), size);
    auto tensor = goblin::core::decodeTensorFrame(frame, goblin::core::FrameLimits{1u << 24});
    if (!tensor)
        return 0;
    const auto again = goblin::core::encodeTensorFrame(*tensor);
    auto roundTrip = goblin::core::decodeTensorFrame(again, goblin::core::FrameLimits{1u << 24});
    if (!roundTrip || roundTrip->byteSize() != tensor->byteSize() ||
        roundTrip->shape() != tensor->shape())
        std::abort();
    return 0;
}
