// Typed messages that move a matmul product in row blocks (docs/protocol.md, "Products in row
// blocks"): a product too large to travel whole is fetched block by block. Builders
// write the exact wire fields; parsers validate every field of a hostile control object. Pure
// functions on values; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// A product over this many bytes (or over the node's tensor limit, whichever is smaller) is
// delivered in row blocks: its job_done carries no tensor and "delivery": "rows".
inline constexpr std::size_t kWholeProductBytes = std::size_t{256} << 20;

// → {"type":"fetch_rows","id","job","row0","rows"}: rows row0 … row0+rows−1 of a done job's C.
struct FetchRows {
    std::int64_t id = 0;
    std::string job;
    std::int64_t row0 = 0;
    std::int64_t rows = 0;
};

// ← {"type":"result_rows","id","job","row0","tensors":1} + the rows (rows × n, C's dtype).
struct ResultRows {
    std::int64_t id = 0;
    std::string job;
    std::int64_t row0 = 0;
    TensorPtr rows;
};

// ← {"type":"result_tile","job","row0","col0","tensors":1} + one accepted tile (rows × cols, C's
// dtype), pushed to the connection that asked for a streamed product.
struct ResultTile {
    std::string job;
    std::int64_t row0 = 0;
    std::int64_t col0 = 0;
    TensorPtr tile;
};

Message toMessage(const FetchRows& fetch);
Message toMessage(const ResultRows& rows);
Message toMessage(const ResultTile& tile);

// InvalidMessage naming the field; rows ≥ 1, row0 ≥ 0; result_rows carries exactly one tensor.
[[nodiscard]] Expected<FetchRows> parseFetchRows(const boost::json::object& control);
[[nodiscard]] Expected<ResultRows> parseResultRows(const Message& message);
// row0, col0 ≥ 0; exactly one tensor.
[[nodiscard]] Expected<ResultTile> parseResultTile(const Message& message);

} // namespace goblin::net
