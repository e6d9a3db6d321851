// Fuzz target: the Sans-I/O MessageAssembler fed a sequence of frames cut from the input (the
// first byte of each chunk picks text or binary, the next two its length) must never crash.
#include <cstddef>
#include <cstdint>
#include <span>

#include "goblin/net/message_assembler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    goblin::net::Limits limits;
    limits.maxControlBytes = 4096;
    limits.maxTensorBytes = 1u << 20;
    goblin::net::MessageAssembler assembler(limits);
    std::size_t offset = 0;
    while (offset + 3 <= size) {
        const auto kind =
            (data[offset] & 1) ? goblin::net::FrameKind::Binary : goblin::net::FrameKind::Text;
        std::size_t length = (std::size_t{data[offset + 1]} << 8) | data[offset + 2];
        offset += 3;
        length = length > size - offset ? size - offset : length;
        const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(data + offset),
                                               length);
        offset += length;
        if (frame.size() > assembler.nextFrameLimit())
            return 0; // the transport refuses it before it is read
        if (!assembler.onFrame(kind, frame))
            return 0; // an error ends the connection
    }
    return 0;
}
