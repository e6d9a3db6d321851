#include "goblin/net/messages/message_type.hpp"

#include <array>

namespace goblin::net {
namespace {

constexpr std::array<std::string_view, kMessageTypeCount> kNames{
    "hello",          "welcome",      "error",          "submit_matmul", "submit_graph",
    "job_accepted",   "progress",     "job_status",     "fetch",         "release",
    "released",       "job_done",     "job_failed",     "task",          "result",
    "task_error",     "verdict",      "audit",          "audit_report",  "submit_train",
    "train_round",    "cancel",       "cancelled",      "list_jobs",     "job_list",
    "forget_inputs",  "train_batch",  "batch_accepted", "fetch_rows",    "result_rows",
    "upload",         "upload_ready", "upload_rows",    "rows_stored",   "drop_upload",
    "upload_dropped", "result_tile",  "check_quota",    "quota",         "plan_graph",
    "graph_plan"};

constexpr bool allNamed() {
    for (std::string_view name : kNames)
        if (name.empty())
            return false;
    return true;
}
static_assert(allNamed(), "every MessageType needs its wire name in kNames");

} // namespace

std::string_view wireName(MessageType type) {
    const auto index = static_cast<std::size_t>(type);
    return index < kNames.size() ? kNames[index] : std::string_view{};
}

std::optional<MessageType> messageTypeFromWire(std::string_view name) {
    for (std::size_t i = 0; i < kNames.size(); ++i)
        if (kNames[i] == name)
            return static_cast<MessageType>(i);
    return std::nullopt;
}

} // namespace goblin::net
