#include "kinds/graph/graph_intake.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "goblin/core/precise_json.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_cost.hpp"

namespace goblin::labnode {

namespace json = boost::json;

namespace {

// The node's own fields in a stored request: how it planned the job.
constexpr const char* kPlannedRanges = "planned_ranges";
constexpr const char* kStageBudget = "stage_budget";
// The planner its stages were cut by (StageBudget::planner); absent: the first.
constexpr const char* kStagePlanner = "stage_planner";

} // namespace

std::int64_t stageBudget(const VolunteerPool& pool, int opinions,
                         const GraphIntakeSettings& settings) {
    const std::int64_t lent =
        pool.count == 0 ? settings.planVolunteerBytes
                        : (opinions > 1 && pool.count > 1 ? pool.secondBytes : pool.largestBytes);
    return lent > 0 ? std::min(lent, settings.maxTaskBytes) : settings.maxTaskBytes;
}

namespace {

// LimitExceeded when a chunk holds more than the node allows any task (it could not be cut).
Expected<void> checkTaskSizes(const std::vector<GraphChunk>& chunks,
                              const GraphIntakeSettings& settings) {
    for (const GraphChunk& chunk : chunks)
        if (chunk.peakBytes > settings.maxTaskBytes)
            return makeError(ErrorCode::LimitExceeded,
                             "a task of this graph holds " + std::to_string(chunk.peakBytes >> 20) +
                                 " MiB of values at once; this node allows " +
                                 std::to_string(settings.maxTaskBytes >> 20) +
                                 " MiB, and it cannot be cut into stages that fit (split it along "
                                 "a batch dim into more chunks)");
    return {};
}

// LimitExceeded when a range could not be cut because one of its values alone is bigger than
// the largest volunteer lends (connected, or the configured size when none is): no split fits it.
Expected<void> checkValueSizes(const std::vector<GraphChunk>& chunks, const VolunteerPool& pool,
                               const GraphIntakeSettings& settings) {
    const std::int64_t largest = pool.count > 0 ? pool.largestBytes : settings.planVolunteerBytes;
    if (largest <= 0) // not limited
        return {};
    for (const GraphChunk& chunk : chunks)
        if (!chunk.whyWhole.empty() && chunk.bulkiestValueBytes > largest)
            return makeError(
                ErrorCode::LimitExceeded,
                "no split of this graph fits a volunteer: its " + chunk.bulkiestValueNode +
                    " reads or makes a value of " + std::to_string(chunk.bulkiestValueBytes) +
                    " bytes, and the largest volunteer lends " + std::to_string(largest) +
                    " bytes (a value is never cut; split the graph along a batch "
                    "dim into more chunks, or connect a bigger volunteer)");
    return {};
}

} // namespace

Expected<PlannedChunks> planChunks(const GraphSubmission& submission, const VolunteerPool& pool,
                                   const GraphIntakeSettings& settings, Unfittable unfittable) {
    const int opinions = submission.verification == GraphVerification::Freivalds ? 1 : 2;
    const std::int64_t budget = stageBudget(pool, opinions, settings);
    auto chunks = splitIntoChunks(submission, std::max<std::int64_t>(1, pool.count),
                                  settings.limits, StageBudget{budget});
    if (!chunks)
        return tl::unexpected(chunks.error());
    if (auto fits = checkTaskSizes(*chunks, settings); !fits)
        return tl::unexpected(fits.error());
    if (unfittable == Unfittable::Refused)
        if (auto fits = checkValueSizes(*chunks, pool, settings); !fits)
            return tl::unexpected(fits.error());
    return PlannedChunks{std::move(*chunks), budget, opinions};
}

Expected<GraphIntake> takeInGraph(const net::Message& message, const VolunteerPool& pool,
                                  const GraphIntakeSettings& settings, const BlobStore& blobs,
                                  Unfittable unfittable) {
    auto submission = parseGraphSubmission(message, settings.limits);
    if (!submission)
        return tl::unexpected(submission.error());
    auto planned = planChunks(*submission, pool, settings, unfittable);
    if (!planned)
        return tl::unexpected(planned.error());
    auto& chunks = planned->chunks;
    const std::int64_t budget = planned->budget;
    auto stored = storeTensors(blobs, valuesOf(submission->inputs));
    if (!stored)
        return makeError(ErrorCode::Internal, "storing the inputs: " + stored.error().message);
    json::object request{{"graph", message.control.at("graph")}};
    for (const char* field : {"batch", "verification"})
        if (const auto* value = message.control.if_contains(field))
            request[field] = *value;
    request[kPlannedRanges] = static_cast<std::int64_t>(rangeCount(chunks));
    request[kStageBudget] = budget;
    request[kStagePlanner] = kCurrentPlanner;
    double flops = 0;
    for (const GraphChunk& chunk : chunks)
        flops += graphFlops(chunk.graph, chunk.plan);
    return GraphIntake{std::move(*submission), std::move(chunks), json::serialize(request),
                       json::serialize(*stored), flops};
}

Expected<std::vector<GraphTaskRow>> insertGraphJobAndTasks(Database& db, const GraphJobRow& job) {
    auto transaction = Transaction::begin(db);
    if (!transaction)
        return tl::unexpected(transaction.error());
    if (auto ok = insertGraphJob(db, job); !ok)
        return tl::unexpected(ok.error());
    auto tasks = insertGraphTasks(db, job.id, job.tasks);
    if (!tasks)
        return tl::unexpected(tasks.error());
    if (auto ok = transaction->commit(); !ok)
        return tl::unexpected(ok.error());
    return tasks;
}

std::int64_t plannedStageBudget(const std::string& request) {
    json::error_code ec;
    const json::value parsed = core::parsePrecise(request, ec);
    if (ec || !parsed.is_object())
        return 0;
    const auto* budget = parsed.get_object().if_contains(kStageBudget);
    return budget && budget->is_int64() ? budget->as_int64() : 0;
}

std::string replannedRequest(const std::string& request, const std::vector<GraphChunk>& chunks,
                             std::int64_t budget) {
    json::error_code ec;
    json::value parsed = core::parsePrecise(request, ec);
    if (ec || !parsed.is_object())
        return request;
    parsed.get_object()[kPlannedRanges] = static_cast<std::int64_t>(rangeCount(chunks));
    parsed.get_object()[kStageBudget] = budget;
    parsed.get_object()[kStagePlanner] = kCurrentPlanner;
    return json::serialize(parsed);
}

Expected<GraphIntake> reloadGraphIntake(const GraphJobRow& row, const GraphIntakeSettings& settings,
                                        const BlobStore& blobs) {
    json::error_code requestError, inputsError;
    json::value request = core::parsePrecise(row.request, requestError);
    json::value stored = json::parse(row.inputs, inputsError);
    if (requestError || inputsError || !request.is_object() || !stored.is_array())
        return makeError(ErrorCode::Internal, "its stored request is malformed");
    auto inputs = loadTensors(blobs, stored.get_array());
    if (!inputs)
        return tl::unexpected(inputs.error());
    json::object& fields = request.get_object();
    // Jobs stored before stages were planned have one range per task and no budget.
    std::int64_t ranges = row.tasks;
    std::int64_t budget = 0;
    if (const auto* planned = fields.if_contains(kPlannedRanges); planned && planned->is_int64())
        ranges = planned->as_int64();
    if (const auto* saved = fields.if_contains(kStageBudget); saved && saved->is_int64())
        budget = saved->as_int64();
    const auto* planner = fields.if_contains(kStagePlanner);
    const StageBudget stages{budget, planner && planner->is_int64()
                                         ? static_cast<int>(std::clamp<std::int64_t>(
                                               planner->as_int64(), kFirstPlanner, kCurrentPlanner))
                                         : kFirstPlanner};
    fields.erase(kPlannedRanges);
    fields.erase(kStageBudget);
    fields.erase(kStagePlanner);
    net::Message message{fields, {}};
    for (core::Tensor& input : *inputs)
        message.tensors.push_back(std::make_shared<const core::Tensor>(std::move(input)));
    auto submission = parseGraphSubmission(message, settings.limits);
    if (!submission)
        return tl::unexpected(submission.error());
    auto chunks = splitIntoChunks(*submission, ranges, settings.limits, stages);
    if (!chunks)
        return tl::unexpected(chunks.error());
    return GraphIntake{std::move(*submission), std::move(*chunks), row.request, row.inputs, 0};
}

} // namespace goblin::labnode
