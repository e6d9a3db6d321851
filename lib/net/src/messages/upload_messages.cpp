#include "goblin/net/messages/upload_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

namespace {

json::object uploadControl(MessageType type, std::int64_t id, const std::string& upload) {
    json::object control = detail::controlOf(type);
    control["id"] = id;
    control["upload"] = upload;
    return control;
}

// {"type", "id", "upload"}: the head every upload message but the first shares.
Expected<UploadReply> parseUploadHead(const json::object& control, MessageType type) {
    if (auto ok = detail::requireType(control, type); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    auto upload = detail::requireName(control, "upload");
    if (!upload)
        return tl::unexpected(upload.error());
    return UploadReply{*id, std::move(*upload)};
}

} // namespace

Message toMessage(const Upload& upload) {
    json::object control = detail::controlOf(MessageType::Upload);
    control["id"] = upload.id;
    control["dtype"] = std::string(core::wireName(upload.dtype));
    control["rows"] = upload.rows;
    control["cols"] = upload.cols;
    return Message{std::move(control), {}};
}

Message uploadReadyMessage(const UploadReply& reply) {
    return Message{uploadControl(MessageType::UploadReady, reply.id, reply.upload), {}};
}

Message uploadDroppedMessage(const UploadReply& reply) {
    return Message{uploadControl(MessageType::UploadDropped, reply.id, reply.upload), {}};
}

Message toMessage(const UploadRows& rows) {
    json::object control = uploadControl(MessageType::UploadRows, rows.id, rows.upload);
    control["row0"] = rows.row0;
    return detail::withTensors(std::move(control), {rows.rows});
}

Message toMessage(const RowsStored& stored) {
    json::object control = uploadControl(MessageType::RowsStored, stored.id, stored.upload);
    control["rows"] = stored.rows;
    return Message{std::move(control), {}};
}

Message toMessage(const DropUpload& drop) {
    return Message{uploadControl(MessageType::DropUpload, drop.id, drop.upload), {}};
}

Expected<Upload> parseUpload(const json::object& control) {
    if (auto ok = detail::requireType(control, MessageType::Upload); !ok)
        return tl::unexpected(ok.error());
    auto id = detail::optionalId(control);
    if (!id)
        return tl::unexpected(id.error());
    auto dtypeName = requireString(control, "dtype");
    if (!dtypeName)
        return tl::unexpected(dtypeName.error());
    const auto dtype = core::dtypeFromWireName(*dtypeName);
    if (!dtype || !core::isFloatingPoint(*dtype))
        return invalid("upload 'dtype' is f32 or f64");
    auto rows = requireIntIn(control, "rows", 1, INT64_MAX);
    if (!rows)
        return tl::unexpected(rows.error());
    auto cols = requireIntIn(control, "cols", 1, INT64_MAX);
    if (!cols)
        return tl::unexpected(cols.error());
    return Upload{*id, *dtype, *rows, *cols};
}

Expected<UploadReply> parseUploadReady(const json::object& control) {
    return parseUploadHead(control, MessageType::UploadReady);
}

Expected<UploadReply> parseUploadDropped(const json::object& control) {
    return parseUploadHead(control, MessageType::UploadDropped);
}

Expected<UploadRows> parseUploadRows(const Message& message) {
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    auto head = parseUploadHead(message.control, MessageType::UploadRows);
    if (!head)
        return tl::unexpected(head.error());
    auto row0 = requireIntIn(message.control, "row0", 0, INT64_MAX);
    if (!row0)
        return tl::unexpected(row0.error());
    if (message.tensors.size() != 1)
        return invalid("upload_rows carries exactly one tensor");
    return UploadRows{head->id, std::move(head->upload), *row0, message.tensors[0]};
}

Expected<RowsStored> parseRowsStored(const json::object& control) {
    auto head = parseUploadHead(control, MessageType::RowsStored);
    if (!head)
        return tl::unexpected(head.error());
    auto rows = requireIntIn(control, "rows", 0, INT64_MAX);
    if (!rows)
        return tl::unexpected(rows.error());
    return RowsStored{head->id, std::move(head->upload), *rows};
}

Expected<DropUpload> parseDropUpload(const json::object& control) {
    auto head = parseUploadHead(control, MessageType::DropUpload);
    if (!head)
        return tl::unexpected(head.error());
    return DropUpload{head->id, std::move(head->upload)};
}

} // namespace goblin::net
