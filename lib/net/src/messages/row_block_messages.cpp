#include "goblin/net/messages/row_block_messages.hpp"

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/message_type.hpp"
#include "wire_checks.hpp"

namespace goblin::net {

namespace json = boost::json;
using detail::invalid;

Message toMessage(const FetchRows& fetch) {
    Message message = detail::jobRequestMessage(MessageType::FetchRows, fetch.id, fetch.job);
    message.control["row0"] = fetch.row0;
    message.control["rows"] = fetch.rows;
    return message;
}

Message toMessage(const ResultRows& rows) {
    Message message = detail::jobRequestMessage(MessageType::ResultRows, rows.id, rows.job);
    message.control["row0"] = rows.row0;
    return detail::withTensors(std::move(message.control), {rows.rows});
}

Message toMessage(const ResultTile& tile) {
    json::object control = detail::controlOf(MessageType::ResultTile);
    control["job"] = tile.job;
    control["row0"] = tile.row0;
    control["col0"] = tile.col0;
    return detail::withTensors(std::move(control), {tile.tile});
}

Expected<FetchRows> parseFetchRows(const json::object& control) {
    auto request = detail::parseJobRequest(control, MessageType::FetchRows);
    if (!request)
        return tl::unexpected(request.error());
    auto row0 = requireIntIn(control, "row0", 0, INT64_MAX);
    if (!row0)
        return tl::unexpected(row0.error());
    auto rows = requireIntIn(control, "rows", 1, INT64_MAX);
    if (!rows)
        return tl::unexpected(rows.error());
    return FetchRows{request->id, std::move(request->job), *row0, *rows};
}

Expected<ResultRows> parseResultRows(const Message& message) {
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    auto request = detail::parseJobRequest(message.control, MessageType::ResultRows);
    if (!request)
        return tl::unexpected(request.error());
    auto row0 = requireIntIn(message.control, "row0", 0, INT64_MAX);
    if (!row0)
        return tl::unexpected(row0.error());
    if (message.tensors.size() != 1)
        return invalid("result_rows carries exactly one tensor");
    return ResultRows{request->id, std::move(request->job), *row0, message.tensors[0]};
}

Expected<ResultTile> parseResultTile(const Message& message) {
    if (auto ok = detail::checkTensorCount(message); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = detail::requireType(message.control, MessageType::ResultTile); !ok)
        return tl::unexpected(ok.error());
    auto job = detail::requireName(message.control, "job");
    if (!job)
        return tl::unexpected(job.error());
    auto row0 = requireIntIn(message.control, "row0", 0, INT64_MAX);
    if (!row0)
        return tl::unexpected(row0.error());
    auto col0 = requireIntIn(message.control, "col0", 0, INT64_MAX);
    if (!col0)
        return tl::unexpected(col0.error());
    if (message.tensors.size() != 1)
        return invalid("result_tile carries exactly one tensor");
    return ResultTile{std::move(*job), *row0, *col0, message.tensors[0]};
}

} // namespace goblin::net
