#include "kinds/train/train_submission.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include <boost/json.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "kinds/graph/graph_cost.hpp"
#include "kinds/graph/graph_submission.hpp"

namespace goblin::labnode {
namespace {

namespace json = boost::json;

Error invalid(const std::string& what) {
    return Error{ErrorCode::InvalidInput, what};
}

Expected<std::int64_t> integer(const json::object& object, const char* key, std::int64_t low,
                               std::int64_t high, std::optional<std::int64_t> otherwise = {}) {
    const json::value* value = object.if_contains(key);
    if ((!value || value->is_null()) && otherwise)
        return *otherwise;
    if (!value || !value->is_int64() || value->get_int64() < low || value->get_int64() > high)
        return tl::unexpected(invalid(std::string("train '") + key + "' must be an integer from " +
                                      std::to_string(low) + " to " + std::to_string(high)));
    return value->get_int64();
}

Expected<double> number(const json::object& object, const char* key, double low, double below,
                        double otherwise) {
    const json::value* value = object.if_contains(key);
    if (!value || value->is_null())
        return otherwise;
    if (!value->is_number())
        return tl::unexpected(invalid(std::string("optimizer '") + key + "' must be a number"));
    const double number = value->to_number<double>();
    if (!std::isfinite(number) || number < low || number >= below)
        return tl::unexpected(invalid(std::string("optimizer '") + key + "' is out of range"));
    return number;
}

Expected<OptimizerSpec> parseOptimizer(const json::object& object) {
    OptimizerSpec spec;
    const json::value* kind = object.if_contains("kind");
    const std::string name = kind && kind->is_string() ? std::string(kind->get_string()) : "";
    if (name == "sgd")
        spec.kind = OptimizerSpec::Kind::Sgd;
    else if (name == "adam")
        spec.kind = OptimizerSpec::Kind::Adam;
    else if (name == "adamw")
        spec.kind = OptimizerSpec::Kind::AdamW;
    else
        return tl::unexpected(invalid("optimizer 'kind' is sgd, adam or adamw"));
    constexpr double kHuge = 1e30;
    auto momentum = number(object, "momentum", 0, kHuge, 0);
    auto dampening = number(object, "dampening", 0, kHuge, 0);
    auto decay = number(object, "weight_decay", 0, kHuge, 0);
    auto eps = number(object, "eps", 0, kHuge, 1e-8);
    for (const auto* read : {&momentum, &dampening, &decay, &eps})
        if (!*read)
            return tl::unexpected(read->error());
    spec.momentum = *momentum;
    spec.dampening = *dampening;
    spec.weightDecay = *decay;
    spec.eps = *eps;
    if (const json::value* nesterov = object.if_contains("nesterov"); nesterov) {
        if (!nesterov->is_bool())
            return tl::unexpected(invalid("optimizer 'nesterov' is true or false"));
        spec.nesterov = nesterov->get_bool();
    }
    if (spec.nesterov && (spec.momentum <= 0 || spec.dampening != 0))
        return tl::unexpected(invalid("Nesterov momentum needs a momentum and zero dampening"));
    if (const json::value* betas = object.if_contains("betas"); betas && !betas->is_null()) {
        if (!betas->is_array() || betas->get_array().size() != 2 ||
            !betas->get_array()[0].is_number() || !betas->get_array()[1].is_number())
            return tl::unexpected(invalid("optimizer 'betas' is a pair of numbers"));
        spec.beta1 = betas->get_array()[0].to_number<double>();
        spec.beta2 = betas->get_array()[1].to_number<double>();
        if (!(spec.beta1 >= 0 && spec.beta1 < 1 && spec.beta2 >= 0 && spec.beta2 < 1))
            return tl::unexpected(invalid("optimizer 'betas' are in [0, 1)"));
    }
    return spec;
}

Expected<std::vector<double>> parseRates(const json::object& object, std::int64_t rounds) {
    const json::value* lr = object.if_contains("lr");
    if (!lr || !lr->is_array() || static_cast<std::int64_t>(lr->get_array().size()) != rounds)
        return tl::unexpected(invalid("optimizer 'lr' lists one learning rate per round (" +
                                      std::to_string(rounds) + ")"));
    std::vector<double> rates;
    for (const json::value& rate : lr->get_array()) {
        if (!rate.is_number() || !std::isfinite(rate.to_number<double>()) ||
            rate.to_number<double>() < 0)
            return tl::unexpected(invalid("every learning rate is a finite number >= 0"));
        rates.push_back(rate.to_number<double>());
    }
    return rates;
}

Expected<std::size_t> inputIndex(const json::object& train, const char* key, std::size_t inputs) {
    auto index = integer(train, key, 0, static_cast<std::int64_t>(inputs) - 1);
    if (!index)
        return tl::unexpected(index.error());
    return static_cast<std::size_t>(*index);
}

Expected<TrainPlan> parsePlan(const json::object& train, std::size_t inputs) {
    TrainPlan plan;
    const json::value* data = train.if_contains("data");
    if (!data || !data->is_array() || data->get_array().size() != 2 ||
        !data->get_array()[0].is_int64() || !data->get_array()[1].is_int64())
        return tl::unexpected(invalid("train 'data' names the graph inputs of x and y"));
    const auto last = static_cast<std::int64_t>(inputs) - 1;
    for (const json::value& index : data->get_array())
        if (index.get_int64() < 0 || index.get_int64() > last)
            return tl::unexpected(invalid("train 'data' names an input the graph does not have"));
    plan.xInput = static_cast<std::size_t>(data->get_array()[0].get_int64());
    plan.yInput = static_cast<std::size_t>(data->get_array()[1].get_int64());
    auto params = inputIndex(train, "params", inputs);
    auto batch = integer(train, "batch_size", 1, std::int64_t{1} << 40);
    auto micro = integer(train, "micro_batch", 1, std::int64_t{1} << 40);
    auto rounds = integer(train, "rounds", 1, kMaxTrainRounds);
    auto first = integer(train, "first_round", 0, std::int64_t{1} << 31, 0);
    auto seed = integer(train, "dropout_seed", 0, kMaxDropoutSeed, 0);
    for (const auto* read : {&batch, &micro, &rounds, &first, &seed})
        if (!*read)
            return tl::unexpected(read->error());
    if (!params)
        return tl::unexpected(params.error());
    plan.paramsInput = *params;
    if (plan.paramsInput == plan.xInput || plan.paramsInput == plan.yInput ||
        plan.xInput == plan.yInput)
        return tl::unexpected(invalid("train 'params' and 'data' name three different inputs"));
    plan.batchSize = *batch;
    plan.microBatch = *micro;
    plan.rounds = *rounds;
    plan.firstRound = *first;
    plan.dropoutSeed = *seed;
    if (const json::value* stream = train.if_contains("stream"); stream && !stream->is_null()) {
        if (!stream->is_bool())
            return tl::unexpected(invalid("train 'stream' is true or false"));
        plan.streamed = stream->get_bool();
    }
    if (const json::value* how = train.if_contains("verification"); how && !how->is_null()) {
        if (*how != "replicas" && *how != "freivalds")
            return tl::unexpected(
                invalid("train 'verification' is \"replicas\" (the default) or \"freivalds\""));
        plan.checkedByFreivalds = *how == "freivalds";
    }
    if (plan.batchSize % plan.microBatch != 0)
        return tl::unexpected(invalid("micro_batch " + std::to_string(plan.microBatch) +
                                      " does not divide batch_size " +
                                      std::to_string(plan.batchSize)));
    if (plan.batchSize / plan.microBatch > kMaxGraphChunks)
        return makeError(ErrorCode::LimitExceeded, "a round has at most " +
                                                       std::to_string(kMaxGraphChunks) +
                                                       " micro-batches");
    if (const json::value* clip = train.if_contains("clip_grad_norm"); clip && !clip->is_null()) {
        if (!clip->is_number() || !(clip->to_number<double>() > 0) ||
            !std::isfinite(clip->to_number<double>()))
            return tl::unexpected(invalid("train 'clip_grad_norm' is a positive number or null"));
        plan.clipGradNorm = clip->to_number<double>();
    }
    const json::value* optimizer = train.if_contains("optimizer");
    if (!optimizer || !optimizer->is_object())
        return tl::unexpected(invalid("train needs an 'optimizer' object"));
    auto spec = parseOptimizer(optimizer->get_object());
    if (!spec)
        return tl::unexpected(spec.error());
    plan.optimizer = *spec;
    auto rates = parseRates(optimizer->get_object(), plan.rounds);
    if (!rates)
        return tl::unexpected(rates.error());
    plan.learningRates = std::move(*rates);
    return plan;
}

// The step's inputs and outputs have the shapes a training step has.
Expected<std::int64_t> checkStep(const core::graph::Graph& graph,
                                 const core::graph::GraphPlan& validated, const TrainPlan& plan,
                                 const std::vector<net::TensorPtr>& tensors) {
    const auto& params = graph.inputs[plan.paramsInput].spec;
    if (params.dtype != core::DType::F32 || params.shape.size() != 1)
        return tl::unexpected(invalid("the parameters are one flat float32 vector"));
    if (graph.outputs.size() != 2)
        return tl::unexpected(invalid("a training step has two outputs: the loss and the "
                                      "flat gradient"));
    const auto& loss = validated.specs.at(graph.outputs[0]);
    const auto& grad = validated.specs.at(graph.outputs[1]);
    if (loss.dtype != core::DType::F32 || !loss.shape.empty())
        return tl::unexpected(invalid("the step's first output (the loss) is a float32 scalar"));
    if (grad.dtype != core::DType::F32 || grad.shape != params.shape)
        return tl::unexpected(invalid("the step's second output (the gradient) has the "
                                      "parameters' dtype and shape"));
    std::int64_t samples = -1;
    for (std::size_t i : {plan.xInput, plan.yInput}) {
        const auto& spec = graph.inputs[i].spec;
        const core::Tensor& tensor = *tensors[i];
        if (spec.shape.empty() || spec.shape[0] != plan.microBatch)
            return tl::unexpected(invalid("x and y are declared with micro_batch (" +
                                          std::to_string(plan.microBatch) + ") rows"));
        if (tensor.dtype() != spec.dtype || tensor.shape().size() != spec.shape.size() ||
            !std::equal(spec.shape.begin() + 1, spec.shape.end(), tensor.shape().begin() + 1))
            return makeError(ErrorCode::ShapeMismatch,
                             "input " + std::to_string(i) + " does not match the step's x or y");
        if (samples >= 0 && tensor.shape()[0] != samples)
            return makeError(ErrorCode::ShapeMismatch, "x and y have different sample counts");
        samples = tensor.shape()[0];
    }
    if (plan.streamed && samples != plan.batchSize)
        return tl::unexpected(invalid("a streamed job's submit_train carries its first batch: " +
                                      std::to_string(plan.batchSize) + " samples, not " +
                                      std::to_string(samples)));
    if (samples < plan.batchSize)
        return tl::unexpected(invalid("the data has " + std::to_string(samples) +
                                      " samples, fewer than one batch of " +
                                      std::to_string(plan.batchSize)));
    return samples;
}

// "f32[4, 2]".
std::string describe(const core::Tensor& tensor) {
    std::string text = std::string(core::wireName(tensor.dtype())) + "[";
    for (std::size_t i = 0; i < tensor.shape().size(); ++i)
        text.append(i ? ", " : "").append(std::to_string(tensor.shape()[i]));
    return text + "]";
}

// Rows (first + i) mod N, i < count, of `tensor` along dim 0.
Expected<core::Tensor> gatherRows(const core::Tensor& tensor, std::int64_t first,
                                  std::int64_t count) {
    core::Shape shape = tensor.shape();
    const std::int64_t samples = shape[0];
    shape[0] = count;
    auto out = core::Tensor::allocate(tensor.dtype(), shape);
    if (!out)
        return tl::unexpected(out.error());
    const std::size_t row = tensor.bytes().size() / static_cast<std::size_t>(samples);
    for (std::int64_t i = 0; i < count; ++i) {
        const auto from = static_cast<std::size_t>((first + i) % samples);
        std::memcpy(out->bytes().data() + static_cast<std::size_t>(i) * row,
                    tensor.bytes().data() + from * row, row);
    }
    return out;
}

// The step's graph with every dropout_mask drawing from `seed` (its offsets are the capture's; the
// node adds each micro-batch's share when it splits the round).
json::value withDropoutSeed(const json::value& graph, std::int64_t seed) {
    json::value out = graph;
    json::value* nodes = out.as_object().if_contains("nodes");
    if (!nodes || !nodes->is_array())
        return out;
    for (json::value& node : nodes->as_array()) {
        json::object* fields = node.if_object();
        const json::value* op = fields ? fields->if_contains("op") : nullptr;
        json::value* attrs = fields ? fields->if_contains("attrs") : nullptr;
        if (op && *op == "dropout_mask" && attrs && attrs->is_object())
            attrs->as_object()["seed"] = seed;
    }
    return out;
}

} // namespace

Expected<TrainSubmission> parseTrainSubmission(const net::Message& message,
                                               const core::graph::GraphLimits& limits) {
    const json::value* graphJson = message.control.if_contains("graph");
    const json::value* train = message.control.if_contains("train");
    if (!graphJson || !graphJson->is_object() || !train || !train->is_object())
        return tl::unexpected(invalid("submit_train needs a 'graph' and a 'train' object"));
    auto graph = core::graph::decodeGraph(json::serialize(*graphJson), limits);
    if (!graph)
        return tl::unexpected(graph.error());
    auto validated = core::graph::validateGraph(*graph, limits);
    if (!validated)
        return tl::unexpected(validated.error());
    auto plan = parsePlan(train->get_object(), graph->inputs.size());
    if (!plan)
        return tl::unexpected(plan.error());
    const std::size_t stateCount = message.tensors.size() >= graph->inputs.size()
                                       ? message.tensors.size() - graph->inputs.size()
                                       : 0;
    if (message.tensors.size() < graph->inputs.size() ||
        (stateCount != 0 && stateCount != plan->optimizer.stateTensors()))
        return tl::unexpected(invalid(
            "submit_train carries the graph's " + std::to_string(graph->inputs.size()) +
            " input(s), then 0 or " + std::to_string(plan->optimizer.stateTensors()) +
            " optimizer state tensor(s); " + std::to_string(message.tensors.size()) + " came"));
    TrainSubmission submission;
    submission.graph = *graphJson;
    submission.plan = std::move(*plan);
    submission.inputs.assign(message.tensors.begin(),
                             message.tensors.begin() +
                                 static_cast<std::ptrdiff_t>(graph->inputs.size()));
    auto samples = checkStep(*graph, *validated, submission.plan, submission.inputs);
    if (!samples)
        return tl::unexpected(samples.error());
    submission.samples = *samples;
    // The step graph computes one batch of its x input's leading size; a round, plan.batchSize.
    const core::Shape& stepBatch = graph->inputs[submission.plan.xInput].spec.shape;
    const double batches =
        stepBatch.empty() || stepBatch[0] <= 0
            ? 1.0
            : static_cast<double>(submission.plan.batchSize) / static_cast<double>(stepBatch[0]);
    submission.flops =
        graphFlops(*graph, *validated) * batches * static_cast<double>(submission.plan.rounds);
    const core::Tensor& params = *submission.inputs[submission.plan.paramsInput];
    for (std::size_t i = graph->inputs.size(); i < message.tensors.size(); ++i) {
        if (message.tensors[i]->dtype() != core::DType::F32 ||
            message.tensors[i]->shape() != params.shape())
            return makeError(ErrorCode::ShapeMismatch,
                             "optimizer state tensors have the parameters' dtype and shape");
        submission.state.push_back(*message.tensors[i]);
    }
    // Round 0's job, checked now like any graph job (the other rounds differ only in values).
    auto first = roundMessage(submission, params, submission.plan.firstRound);
    if (!first)
        return tl::unexpected(first.error());
    if (auto ok = parseGraphSubmission(*first, limits); !ok)
        return tl::unexpected(ok.error());
    return submission;
}

Expected<void> checkStreamedBatch(const TrainSubmission& submission,
                                  const std::vector<net::TensorPtr>& batch) {
    const TrainPlan& plan = submission.plan;
    std::size_t part = 0;
    for (std::size_t input : {plan.xInput, plan.yInput}) {
        const core::Tensor& first = *submission.inputs[input];
        const core::Tensor& tensor = *batch.at(part++);
        if (tensor.dtype() != first.dtype() || tensor.shape() != first.shape())
            return makeError(ErrorCode::ShapeMismatch,
                             std::string(input == plan.xInput ? "x" : "y") + " of a batch is " +
                                 describe(tensor) + "; the first batch's is " + describe(first));
    }
    return {};
}

Expected<net::Message> roundMessage(const TrainSubmission& submission, const core::Tensor& params,
                                    std::int64_t round,
                                    const std::vector<core::Tensor>* streamedBatch) {
    const TrainPlan& plan = submission.plan;
    json::array inputs, outputs{"mean", "mean"};
    net::Message message;
    for (std::size_t i = 0; i < submission.inputs.size(); ++i) {
        const bool data = i == plan.xInput || i == plan.yInput;
        inputs.push_back(data ? json::value(0) : json::value(nullptr));
        if (i == plan.paramsInput) {
            message.tensors.push_back(std::make_shared<const core::Tensor>(params));
        } else if (data && streamedBatch) {
            message.tensors.push_back(
                std::make_shared<const core::Tensor>(streamedBatch->at(i == plan.xInput ? 0 : 1)));
        } else if (data) {
            auto rows = gatherRows(*submission.inputs[i],
                                   round * plan.batchSize % submission.samples, plan.batchSize);
            if (!rows)
                return tl::unexpected(rows.error());
            message.tensors.push_back(std::make_shared<const core::Tensor>(std::move(*rows)));
        } else {
            message.tensors.push_back(submission.inputs[i]);
        }
    }
    message.control =
        json::object{{"type", "submit_graph"},
                     {"graph", withDropoutSeed(submission.graph, plan.dropoutSeed + round)},
                     {"batch", json::object{{"inputs", std::move(inputs)},
                                            {"outputs", std::move(outputs)},
                                            {"micro_batch", plan.microBatch}}}};
    if (plan.checkedByFreivalds)
        message.control["verification"] = "freivalds";
    return message;
}

} // namespace goblin::labnode
