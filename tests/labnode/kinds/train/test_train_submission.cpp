// Tests of a training job's submission at the lab node (kinds/train/train_submission):
// submit_train's checks and round batches (samples r·B … r·B+B−1 modulo N, the step's graph
// unchanged). The optimizer step has its own test (test_optimizer_step).
#include <QtTest/QtTest>

#include <numeric>

#include <boost/json.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "kinds/graph/graph_submission.hpp"
#include "kinds/train/train_submission.hpp"

using goblin::core::DType;
using goblin::core::Tensor;
namespace graph = goblin::core::graph;
namespace ops = goblin::core::ops;
namespace lab = goblin::labnode;
namespace json = boost::json;

namespace {

Tensor vector(std::vector<float> values) {
    Tensor t = Tensor::allocate(DType::F32, {static_cast<std::int64_t>(values.size())}).value();
    std::copy(values.begin(), values.end(), t.values<float>().begin());
    return t;
}

// A training step's shape: flat params [3], x [2, 3], y [2] → (mean of (x·w − y)², its gradient).
graph::Graph regressionStep() {
    graph::Graph g;
    g.inputs.push_back({0, {DType::F32, {3}}});
    g.inputs.push_back({1, {DType::F32, {2, 3}}});
    g.inputs.push_back({2, {DType::F32, {2}}});
    g.nodes.push_back({3, ops::OpCode::Mul, {1, 0}, {}});
    g.nodes.push_back({4, ops::OpCode::Sum, {3}, {{"dims", ops::IntList{1}}}});
    g.nodes.push_back({5, ops::OpCode::Sub, {4, 2}, {}});
    g.nodes.push_back({6, ops::OpCode::Mul, {5, 5}, {}});
    g.nodes.push_back({7, ops::OpCode::Mean, {6}, {{"dims", ops::IntList{0}}}});
    g.nodes.push_back({8, ops::OpCode::Mean, {1}, {{"dims", ops::IntList{0}}}}); // a stand-in
    g.outputs = {7, 8};
    return g;
}

goblin::net::Message trainMessage(const char* train, std::int64_t samples,
                                  std::size_t stateTensors = 0) {
    goblin::net::Message message;
    message.control = json::object{{"type", "submit_train"},
                                   {"graph", json::parse(graph::encodeGraph(regressionStep()))},
                                   {"train", json::parse(train)}};
    message.tensors.push_back(std::make_shared<const Tensor>(vector({0.5f, -1.0f, 2.0f})));
    Tensor x = Tensor::allocate(DType::F32, {samples, 3}).value();
    std::iota(x.values<float>().begin(), x.values<float>().end(), 0.0f);
    Tensor y = Tensor::allocate(DType::F32, {samples}).value();
    std::iota(y.values<float>().begin(), y.values<float>().end(), 100.0f);
    message.tensors.push_back(std::make_shared<const Tensor>(std::move(x)));
    message.tensors.push_back(std::make_shared<const Tensor>(std::move(y)));
    for (std::size_t i = 0; i < stateTensors; ++i)
        message.tensors.push_back(std::make_shared<const Tensor>(vector({0, 0, 0})));
    return message;
}

constexpr const char* kGoodTrain =
    R"({"params":0,"data":[1,2],"batch_size":4,"micro_batch":2,"rounds":3,)"
    R"("optimizer":{"kind":"adam","lr":[0.1,0.1,0.05]}})";

} // namespace

class TestTrainSubmission : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void submissionsAreCheckedBeforeAnythingIsStored();
    void roundsTakeTheNextBatchAndWrapAround();
};

void TestTrainSubmission::submissionsAreCheckedBeforeAnythingIsStored() {
    const graph::GraphLimits limits;
    auto good = lab::parseTrainSubmission(trainMessage(kGoodTrain, 6), limits);
    QVERIFY2(good.has_value(), good ? "" : good.error().message.c_str());
    QCOMPARE(good->samples, std::int64_t{6});
    QCOMPARE(good->plan.optimizer.stateTensors(), std::size_t{2});
    QVERIFY(lab::parseTrainSubmission(trainMessage(kGoodTrain, 6, 2), limits).has_value());
    struct Case {
        const char* train;
        std::int64_t samples;
        std::size_t state;
        const char* says;
    };
    for (const Case& bad : {
             Case{R"({"params":0,"data":[1,2],"batch_size":4,"micro_batch":3,"rounds":1,)"
                  R"("optimizer":{"kind":"sgd","lr":[0.1]}})",
                  6, 0, "does not divide"},
             Case{kGoodTrain, 3, 0, "fewer than one batch"},
             Case{kGoodTrain, 6, 1, "optimizer state"},
             Case{R"({"params":0,"data":[1,2],"batch_size":4,"micro_batch":2,"rounds":3,)"
                  R"("optimizer":{"kind":"adam","lr":[0.1]}})",
                  6, 0, "one learning rate per round"},
             Case{R"({"params":1,"data":[1,2],"batch_size":4,"micro_batch":2,"rounds":1,)"
                  R"("optimizer":{"kind":"adam","lr":[0.1]}})",
                  6, 0, "different inputs"},
             Case{R"({"params":0,"data":[1,2],"batch_size":4,"micro_batch":2,"rounds":1,)"
                  R"("optimizer":{"kind":"rmsprop","lr":[0.1]}})",
                  6, 0, "sgd, adam or adamw"},
             Case{R"({"params":0,"data":[1,2],"batch_size":4,"micro_batch":2,"rounds":1,)"
                  R"("optimizer":{"kind":"sgd","nesterov":true,"lr":[0.1]}})",
                  6, 0, "Nesterov"},
             Case{R"({"params":0,"data":[1,2],"batch_size":4,"micro_batch":2,"rounds":1,)"
                  R"("clip_grad_norm":-1,"optimizer":{"kind":"sgd","lr":[0.1]}})",
                  6, 0, "clip_grad_norm"},
         }) {
        auto refused =
            lab::parseTrainSubmission(trainMessage(bad.train, bad.samples, bad.state), limits);
        QVERIFY2(!refused.has_value(), bad.says);
        QVERIFY2(refused.error().message.find(bad.says) != std::string::npos,
                 refused.error().message.c_str());
    }
}

void TestTrainSubmission::roundsTakeTheNextBatchAndWrapAround() {
    const graph::GraphLimits limits;
    auto submission = lab::parseTrainSubmission(trainMessage(kGoodTrain, 6), limits).value();
    const Tensor params = vector({1, 2, 3});
    // Round 1 of 6 samples in batches of 4: samples 4, 5, 0, 1.
    auto message = lab::roundMessage(submission, params, 1).value();
    auto parsed = lab::parseGraphSubmission(message, limits);
    QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().message.c_str());
    QCOMPARE(parsed->batch->microBatch, std::int64_t{2});
    QCOMPARE(parsed->batch->chunks, std::int64_t{2});
    QCOMPARE(parsed->batch->outputs[0].kind, lab::OutputMerge::Kind::Mean);
    const auto& y = message.tensors[2]->values<float>();
    QCOMPARE((std::vector<float>(y.begin(), y.end())), (std::vector<float>{104, 105, 100, 101}));
    QCOMPARE(message.tensors[0]->values<float>()[2], 3.0f); // the parameters given
    QCOMPARE(message.tensors[1]->shape(), (goblin::core::Shape{4, 3}));
    QCOMPARE(message.tensors[1]->values<float>()[0], 12.0f); // x row 4
}

QTEST_APPLESS_MAIN(TestTrainSubmission)
#include "test_train_submission.moc"
