// Tests of what the node makes of a training round's outputs (kinds/train/round_step): a
// non-finite loss or gradient element is refused naming the round, with nothing applied or
// stored; anything but two outputs, a loss that is not one number, a gradient of another shape
// and an index past the schedule are the node's own error; a finite round (of any rank, a scalar
// parameter's too) is the gradient clipped and the optimizer's step taken on copies (the caller's
// tensors untouched), at the learning rate the schedule index picks and the step count the
// absolute round gives, its record filled with the loss and the gradient's norm, and its stored
// tensors load back to the new parameters then the state; a round's record as JSON carries every
// field, "redone" only when set.
#include <QtTest/QtTest>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <QTemporaryDir>

#include <boost/json.hpp>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/train/optimizer_step.hpp"
#include "kinds/train/round_step.hpp"
#include "support/tensor_bits.hpp"

using goblin::ErrorCode;
using goblin::core::DType;
using goblin::core::Tensor;
using goblin::testing::deepCopies;
using goblin::testing::deepCopy;
using goblin::testing::sameBits;
using goblin::testing::uniformTensor;
namespace lab = goblin::labnode;
namespace json = boost::json;
using Kind = lab::OptimizerSpec::Kind;

namespace {

constexpr std::int64_t kParams = 33;

Tensor scalar(float value) {
    Tensor t = Tensor::allocate(DType::F32, {}).value();
    t.values<float>()[0] = value;
    return t;
}

// The gradient's 2-norm, summed in float64 here.
double norm64(const Tensor& grad) {
    double sum = 0;
    for (float value : grad.values<float>())
        sum += static_cast<double>(value) * static_cast<double>(value);
    return std::sqrt(sum);
}

std::size_t filesUnder(const std::filesystem::path& root) {
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
        files += entry.is_regular_file() ? 1 : 0;
    return files;
}

lab::TrainPlan planFor(Kind kind, std::optional<double> clip) {
    lab::TrainPlan plan;
    plan.optimizer.kind = kind;
    if (kind == Kind::Sgd)
        plan.optimizer.momentum = 0.9;
    plan.optimizer.weightDecay = 0.01;
    plan.clipGradNorm = clip;
    plan.rounds = 3;
    plan.firstRound = 4;
    plan.learningRates = {0.1, 0.03, 0.007};
    return plan;
}

lab::TrainRoundRow recordOf(std::int64_t round) {
    lab::TrainRoundRow row;
    row.round = round;
    row.tasks = 4;
    row.rejected = 1;
    row.nodeAudited = 3;
    row.nodeDecided = 2;
    row.seconds = 2.5;
    row.verificationSeconds = 0.125;
    row.graphJob = "g-round-" + std::to_string(round);
    return row;
}

// A job's parameters, its optimizer state (`buffers` of them, exp_avg_sq-like ones positive) and a
// round's outputs: the loss and a gradient of norm about 3.3.
struct Round {
    Tensor params;
    std::vector<Tensor> state;
    std::vector<Tensor> outputs;
};

Round randomRound(std::uint32_t seed, std::size_t buffers) {
    std::mt19937 gen(seed);
    Round round{uniformTensor(gen, kParams, -2, 2), {}, {}};
    for (std::size_t i = 0; i < buffers; ++i)
        round.state.push_back(i == 1 ? uniformTensor(gen, kParams, 0.01, 0.5)
                                     : uniformTensor(gen, kParams, -0.5, 0.5));
    round.outputs = {scalar(0.6931f), uniformTensor(gen, kParams, -1, 1)};
    return round;
}

// The step the round should take: the optimizer's step on copies, after clipping a copy of the
// gradient when the plan says so.
struct Stepped {
    Tensor params;
    std::vector<Tensor> state;
};

Stepped stepOnCopies(const lab::TrainPlan& plan, double lr, std::int64_t step, const Round& round) {
    Stepped stepped{deepCopy(round.params), deepCopies(round.state)};
    Tensor grad = deepCopy(round.outputs[1]);
    if (plan.clipGradNorm)
        (void)lab::clipGradNorm(grad, *plan.clipGradNorm);
    if (!lab::optimizerStep(plan.optimizer, lr, step, stepped.params, grad, stepped.state))
        qFatal("the expected step failed");
    return stepped;
}

// A blob store in a temporary folder.
struct Blobs {
    QTemporaryDir dir;
    std::filesystem::path root{dir.filePath(QStringLiteral("data")).toStdString()};
    lab::BlobStore store{root};
};

// A refused round: the error's code and text, the caller's tensors as they were, nothing stored.
void checkRefused(const goblin::Expected<lab::RoundStep>& step, ErrorCode code,
                  const std::vector<std::string>& says, const Round& round, const Round& before,
                  const Blobs& blobs) {
    QVERIFY(!step.has_value());
    QCOMPARE(step.error().code, code);
    for (const std::string& part : says)
        QVERIFY2(step.error().message.find(part) != std::string::npos,
                 qPrintable(QString::fromStdString(step.error().message + " lacks " + part)));
    QVERIFY(sameBits(round.params, before.params));
    QVERIFY(sameBits(round.state, before.state));
    QVERIFY(sameBits(round.outputs, before.outputs));
    QCOMPARE(filesUnder(blobs.root), std::size_t{0});
}

} // namespace

class TestRoundStep : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aNonFiniteLossIsRefusedNamingTheRoundWithNothingApplied_data();
    void aNonFiniteLossIsRefusedNamingTheRoundWithNothingApplied();
    void aNonFiniteGradientElementIsRefusedNamingTheRoundWithNothingApplied_data();
    void aNonFiniteGradientElementIsRefusedNamingTheRoundWithNothingApplied();
    void anythingButTwoOutputsIsTheNodesOwnError();
    void outputsOrAnIndexThatDoNotFitThePlanAreTheNodesOwnError();
    void aScalarParameterStepsLikeAnyOther();
    void aFiniteRoundStepsCopiesOfTheParametersAndState_data();
    void aFiniteRoundStepsCopiesOfTheParametersAndState();
    void theScheduleIndexPicksTheLearningRateAndTheRoundTheStepCount();
    void theStoredTensorsLoadBackAsTheParametersThenTheState_data();
    void theStoredTensorsLoadBackAsTheParametersThenTheState();
    void aRoundRecordCarriesEveryFieldAndRedoneOnlyWhenSet();
};

void TestRoundStep::aNonFiniteLossIsRefusedNamingTheRoundWithNothingApplied_data() {
    QTest::addColumn<float>("loss");
    QTest::addColumn<QString>("says");
    QTest::newRow("nan") << std::numeric_limits<float>::quiet_NaN() << "the loss is nan";
    QTest::newRow("inf") << std::numeric_limits<float>::infinity() << "the loss is inf";
    QTest::newRow("-inf") << -std::numeric_limits<float>::infinity() << "the loss is -inf";
}

void TestRoundStep::aNonFiniteLossIsRefusedNamingTheRoundWithNothingApplied() {
    QFETCH(float, loss);
    QFETCH(QString, says);
    const Blobs blobs;
    Round round = randomRound(1, 2);
    round.outputs[0] = scalar(loss);
    const Round before{deepCopy(round.params), deepCopies(round.state), deepCopies(round.outputs)};
    const auto step = lab::takeRoundStep(planFor(Kind::Adam, 1.0), 0, round.params, round.state,
                                         round.outputs, recordOf(7), blobs.store);
    checkRefused(step, ErrorCode::InvalidInput,
                 {"round 7", says.toStdString(), "nothing was applied"}, round, before, blobs);
}

void TestRoundStep::aNonFiniteGradientElementIsRefusedNamingTheRoundWithNothingApplied_data() {
    QTest::addColumn<int>("element");
    QTest::addColumn<float>("value");
    QTest::newRow("nan first") << 0 << std::numeric_limits<float>::quiet_NaN();
    QTest::newRow("inf inside") << 17 << std::numeric_limits<float>::infinity();
    QTest::newRow("-inf last") << int(kParams - 1) << -std::numeric_limits<float>::infinity();
}

void TestRoundStep::aNonFiniteGradientElementIsRefusedNamingTheRoundWithNothingApplied() {
    QFETCH(int, element);
    QFETCH(float, value);
    for (const auto clip : {std::optional<double>{}, std::optional<double>{0.5}}) {
        const Blobs blobs;
        Round round = randomRound(2, 1);
        round.outputs[1].values<float>()[static_cast<std::size_t>(element)] = value;
        const Round before{deepCopy(round.params), deepCopies(round.state),
                           deepCopies(round.outputs)};
        const auto step = lab::takeRoundStep(planFor(Kind::Sgd, clip), 1, round.params, round.state,
                                             round.outputs, recordOf(12), blobs.store);
        checkRefused(step, ErrorCode::InvalidInput,
                     {"round 12", "gradient is not finite", "nothing was applied"}, round, before,
                     blobs);
        if (QTest::currentTestFailed())
            return;
    }
}

void TestRoundStep::anythingButTwoOutputsIsTheNodesOwnError() {
    const Blobs blobs;
    Round round = randomRound(3, 2);
    const Round before{deepCopy(round.params), deepCopies(round.state), deepCopies(round.outputs)};
    for (const std::size_t count : {0, 1, 3}) {
        std::vector<Tensor> outputs = round.outputs;
        outputs.resize(count, round.outputs[1]);
        const auto step = lab::takeRoundStep(planFor(Kind::Adam, {}), 0, round.params, round.state,
                                             outputs, recordOf(0), blobs.store);
        checkRefused(step, ErrorCode::Internal, {}, round, before, blobs);
        if (QTest::currentTestFailed())
            return;
    }
}

void TestRoundStep::outputsOrAnIndexThatDoNotFitThePlanAreTheNodesOwnError() {
    const Blobs blobs;
    Round round = randomRound(13, 2);
    const Round before{deepCopy(round.params), deepCopies(round.state), deepCopies(round.outputs)};
    const lab::TrainPlan plan = planFor(Kind::Adam, {});
    struct Case {
        const char* name;
        std::vector<Tensor> outputs;
        std::int64_t index;
        std::vector<std::string> says;
    };
    std::mt19937 gen(14);
    const std::vector<Case> cases{
        {"a loss of two numbers", {uniformTensor(gen, 2, 0, 1), round.outputs[1]}, 0, {"loss"}},
        {"an empty loss",
         {Tensor::allocate(DType::F32, {0}).value(), round.outputs[1]},
         0,
         {"loss"}},
        {"a gradient of another size",
         {round.outputs[0], uniformTensor(gen, kParams - 1, -1, 1)},
         0,
         {"gradient does not match"}},
        {"an index past the schedule", round.outputs, 3, {"round 7", "learning-rate schedule"}},
        {"a negative index", round.outputs, -1, {"learning-rate schedule"}},
    };
    for (const Case& bad : cases) {
        const auto step = lab::takeRoundStep(plan, bad.index, round.params, round.state,
                                             bad.outputs, recordOf(7), blobs.store);
        checkRefused(step, ErrorCode::Internal, bad.says, round, before, blobs);
        if (QTest::currentTestFailed()) {
            qWarning("case: %s", bad.name);
            return;
        }
    }
}

void TestRoundStep::aScalarParameterStepsLikeAnyOther() {
    const Blobs blobs;
    const lab::TrainPlan plan = planFor(Kind::AdamW, 0.5);
    const Round round{scalar(1.25f), {scalar(0.125f), scalar(0.25f)}, {scalar(0.5f), scalar(-3)}};
    const auto step = lab::takeRoundStep(plan, 1, round.params, round.state, round.outputs,
                                         recordOf(5), blobs.store);
    QVERIFY2(step.has_value(), step ? "" : step.error().message.c_str());
    const Stepped want = stepOnCopies(plan, plan.learningRates[1], 6, round);
    QVERIFY(sameBits(step->params, want.params));
    QVERIFY(sameBits(step->optimizerState, want.state));
    QVERIFY(!sameBits(step->params, round.params));
    QCOMPARE(step->record.gradNorm, 3.0);
}

void TestRoundStep::aFiniteRoundStepsCopiesOfTheParametersAndState_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("buffers");
    QTest::addColumn<double>("clip"); // 0: none
    QTest::newRow("adam from a fresh start") << int(Kind::Adam) << 0 << 0.0;
    QTest::newRow("adamw resumed, clipped") << int(Kind::AdamW) << 2 << 0.5;
    QTest::newRow("sgd momentum resumed, under the clip") << int(Kind::Sgd) << 1 << 100.0;
    QTest::newRow("sgd momentum from a fresh start, clipped") << int(Kind::Sgd) << 0 << 1.0;
}

void TestRoundStep::aFiniteRoundStepsCopiesOfTheParametersAndState() {
    QFETCH(int, kind);
    QFETCH(int, buffers);
    QFETCH(double, clip);
    const lab::TrainPlan plan =
        planFor(static_cast<Kind>(kind), clip > 0 ? std::optional<double>{clip} : std::nullopt);
    const Blobs blobs;
    const Round round = randomRound(4, static_cast<std::size_t>(buffers));
    const Round before{deepCopy(round.params), deepCopies(round.state), deepCopies(round.outputs)};
    lab::TrainRoundRow record = recordOf(6);
    record.redone = "round 6's graph job was corrected";
    const auto step =
        lab::takeRoundStep(plan, 2, round.params, round.state, round.outputs, record, blobs.store);
    QVERIFY2(step.has_value(), step ? "" : step.error().message.c_str());

    const Stepped want = stepOnCopies(plan, plan.learningRates[2], 7, before);
    QVERIFY(sameBits(step->params, want.params));
    QCOMPARE(step->optimizerState.size(), plan.optimizer.stateTensors());
    QVERIFY(sameBits(step->optimizerState, want.state));
    QVERIFY(!sameBits(step->params, round.params)); // a step was taken…
    QVERIFY(sameBits(round.params, before.params)); // …on a copy
    QVERIFY(sameBits(round.state, before.state));
    QVERIFY(sameBits(round.outputs, before.outputs)); // the gradient clipped on a copy too

    // The record: the loss as float32 gave it, the norm before clipping, the rest as given.
    QCOMPARE(step->record.loss, static_cast<double>(round.outputs[0].values<float>()[0]));
    const double norm = norm64(round.outputs[1]);
    QVERIFY(std::abs(step->record.gradNorm - norm) <= 1e-12 * norm);
    QCOMPARE(step->record.round, record.round);
    QCOMPARE(step->record.tasks, record.tasks);
    QCOMPARE(step->record.rejected, record.rejected);
    QCOMPARE(step->record.nodeAudited, record.nodeAudited);
    QCOMPARE(step->record.nodeDecided, record.nodeDecided);
    QCOMPARE(step->record.seconds, record.seconds);
    QCOMPARE(step->record.verificationSeconds, record.verificationSeconds);
    QCOMPARE(step->record.graphJob, record.graphJob);
    QCOMPARE(step->record.redone, record.redone);
}

void TestRoundStep::theScheduleIndexPicksTheLearningRateAndTheRoundTheStepCount() {
    // Adam: the learning rate and the step count (its bias corrections) both change the bits.
    const lab::TrainPlan plan = planFor(Kind::Adam, {});
    const Round round = randomRound(5, 2);
    for (const std::int64_t index : {0, 1, 2}) {
        const Blobs blobs;
        const std::int64_t absolute = plan.firstRound + index;
        const auto step = lab::takeRoundStep(plan, index, round.params, round.state, round.outputs,
                                             recordOf(absolute), blobs.store);
        QVERIFY(step.has_value());
        const double lr = plan.learningRates[static_cast<std::size_t>(index)];
        QVERIFY(sameBits(step->params, stepOnCopies(plan, lr, absolute + 1, round).params));
        // Neither another round's rate nor a step count from this run's index would do.
        const double otherLr = plan.learningRates[static_cast<std::size_t>((index + 1) % 3)];
        QVERIFY(!sameBits(step->params, stepOnCopies(plan, otherLr, absolute + 1, round).params));
        QVERIFY(!sameBits(step->params, stepOnCopies(plan, lr, index + 1, round).params));
    }
}

void TestRoundStep::theStoredTensorsLoadBackAsTheParametersThenTheState_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("buffers");
    QTest::newRow("adam resumed") << int(Kind::Adam) << 2;
    QTest::newRow("adam from a fresh start") << int(Kind::Adam) << 0;
    QTest::newRow("sgd momentum resumed") << int(Kind::Sgd) << 1;
}

void TestRoundStep::theStoredTensorsLoadBackAsTheParametersThenTheState() {
    QFETCH(int, kind);
    QFETCH(int, buffers);
    const lab::TrainPlan plan = planFor(static_cast<Kind>(kind), 1.0);
    const Blobs blobs;
    const Round round = randomRound(6, static_cast<std::size_t>(buffers));
    const auto step = lab::takeRoundStep(plan, 0, round.params, round.state, round.outputs,
                                         recordOf(4), blobs.store);
    QVERIFY(step.has_value());
    auto loaded = lab::loadTensors(blobs.store, step->stored);
    QVERIFY2(loaded.has_value(), loaded ? "" : loaded.error().message.c_str());
    QCOMPARE(loaded->size(), 1 + plan.optimizer.stateTensors());
    QVERIFY(sameBits(loaded->front(), step->params));
    QVERIFY(
        sameBits(std::vector<Tensor>(loaded->begin() + 1, loaded->end()), step->optimizerState));
    QVERIFY(filesUnder(blobs.root) > 0);
}

void TestRoundStep::aRoundRecordCarriesEveryFieldAndRedoneOnlyWhenSet() {
    lab::TrainRoundRow row;
    row.round = 9;
    row.loss = 0.4375;
    row.gradNorm = 1.75;
    row.tasks = 8;
    row.rejected = 2;
    row.nodeAudited = 5;
    row.nodeDecided = 1;
    row.seconds = 3.25;
    row.verificationSeconds = 0.5;
    row.graphJob = "g-9";
    json::object record = lab::roundRecordJson(row);
    QCOMPARE(record.size(), std::size_t{11});
    QCOMPARE(record.at("round").as_int64(), row.round);
    QCOMPARE(record.at("loss").as_double(), row.loss);
    QCOMPARE(record.at("grad_norm").as_double(), row.gradNorm);
    QCOMPARE(record.at("tasks").as_int64(), row.tasks);
    // Every task of a committed round was verified (docs/protocol.md's train_round).
    QCOMPARE(record.at("verified_tasks").as_int64(), row.tasks);
    QCOMPARE(record.at("rejected").as_int64(), row.rejected);
    QCOMPARE(record.at("node_audited").as_int64(), row.nodeAudited);
    QCOMPARE(record.at("node_decided").as_int64(), row.nodeDecided);
    QCOMPARE(record.at("seconds").as_double(), row.seconds);
    QCOMPARE(record.at("verification_seconds").as_double(), row.verificationSeconds);
    QCOMPARE(std::string(record.at("graph_job").as_string()), row.graphJob);
    QVERIFY(!record.contains("redone"));

    row.redone = "round 9's graph job g-9 was corrected after v-3 was quarantined";
    record = lab::roundRecordJson(row);
    QCOMPARE(record.size(), std::size_t{12});
    QCOMPARE(std::string(record.at("redone").as_string()), row.redone);
    QCOMPARE(record.at("round").as_int64(), row.round);
}

QTEST_APPLESS_MAIN(TestRoundStep)
#include "test_round_step.moc"
