// Typed messages that upload a matrix in row blocks (docs/protocol.md, "Matrices in row blocks"):
// a matrix too large for one message, or read from disk block by block, is staged at
// the node (a file, never memory) and named by its upload id in submit_matmul. Builders write the
// exact wire fields; parsers validate every field of a hostile control object. Pure functions on
// values; safe on any thread.
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/object.hpp>

#include "goblin/core/error.hpp"
#include "goblin/core/tensor.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net {

// → {"type":"upload","id","dtype","rows","cols"}: stage a rows × cols matrix.
struct Upload {
    std::int64_t id = 0;
    core::DType dtype = core::DType::F32;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
};

// ← {"type":"upload_ready","id","upload"}: its id ("u-…").
// ← {"type":"upload_dropped","id","upload"}: the reply to drop_upload.
struct UploadReply {
    std::int64_t id = 0;
    std::string upload;
};

// → {"type":"upload_rows","id","upload","row0","tensors":1} + rows (n × cols): the next rows.
struct UploadRows {
    std::int64_t id = 0;
    std::string upload;
    std::int64_t row0 = 0;
    TensorPtr rows;
};

// ← {"type":"rows_stored","id","upload","rows"}: the rows the node holds now (all of them, in
// order from row 0).
struct RowsStored {
    std::int64_t id = 0;
    std::string upload;
    std::int64_t rows = 0;
};

// → {"type":"drop_upload","id","upload"}: delete a staged matrix not submitted.
struct DropUpload {
    std::int64_t id = 0;
    std::string upload;
};

Message toMessage(const Upload& upload);
Message uploadReadyMessage(const UploadReply& reply);
Message uploadDroppedMessage(const UploadReply& reply);
Message toMessage(const UploadRows& rows);
Message toMessage(const RowsStored& stored);
Message toMessage(const DropUpload& drop);

// InvalidMessage naming the field; dtype f32 or f64, rows and cols ≥ 1, row0 ≥ 0, one tensor.
[[nodiscard]] Expected<Upload> parseUpload(const boost::json::object& control);
[[nodiscard]] Expected<UploadReply> parseUploadReady(const boost::json::object& control);
[[nodiscard]] Expected<UploadReply> parseUploadDropped(const boost::json::object& control);
[[nodiscard]] Expected<UploadRows> parseUploadRows(const Message& message);
[[nodiscard]] Expected<RowsStored> parseRowsStored(const boost::json::object& control);
[[nodiscard]] Expected<DropUpload> parseDropUpload(const boost::json::object& control);

} // namespace goblin::net
