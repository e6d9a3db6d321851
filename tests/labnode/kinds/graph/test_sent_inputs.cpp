// Inputs by digest (docs/protocol.md): the node's record of what a volunteer connection keeps
// (SentInputs) and the volunteer's kept inputs (KeptInputs) stay in agreement over a stream of
// frames that pass through the real wire form: every task resolves to exactly the inputs it
// would have carried whole, a shared input travels once, eviction stays within the announced
// budget, and a volunteer refuses a frame that names what it does not keep or lies about a digest.
#include <QtTest/QtTest>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "goblin/net/content_digest.hpp"
#include "goblin/net/message_assembler.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "kept_inputs.hpp"
#include "kinds/graph/sent_inputs.hpp"

using namespace goblin;
using goblin::labnode::InputPlan;
using goblin::labnode::SentInputs;
using goblin::net::TensorPtr;
using goblin::volunteer::KeptInputs;

namespace {

TensorPtr tensorOf(std::int64_t elements, float fill) {
    auto tensor = core::Tensor::allocate(core::DType::F32, {elements}).value();
    auto* values = reinterpret_cast<float*>(tensor.bytes().data());
    for (std::int64_t i = 0; i < elements; ++i)
        values[i] = fill + static_cast<float>(i);
    return std::make_shared<const core::Tensor>(std::move(tensor));
}

std::int64_t bytesOf(const std::vector<TensorPtr>& tensors) {
    std::int64_t bytes = 0;
    for (const TensorPtr& tensor : tensors)
        bytes += static_cast<std::int64_t>(tensor->byteSize());
    return bytes;
}

bool sameValues(const TensorPtr& a, const TensorPtr& b) {
    return a->dtype() == b->dtype() && a->shape() == b->shape() &&
           std::memcmp(a->bytes().data(), b->bytes().data(), a->byteSize()) == 0;
}

// Both ends of one connection: what the node plans goes through toMessage and the parser, and the
// volunteer resolves it (forget_inputs first, as the node sends it first).
struct Connection {
    explicit Connection(std::int64_t budget) : node(budget), volunteer(budget) {}
    SentInputs node;
    KeptInputs volunteer;
    std::int64_t bytesSent = 0;
    std::int64_t nextTask = 1;

    Expected<std::vector<TensorPtr>> send(const std::string& jobId,
                                          const std::vector<TensorPtr>& inputs,
                                          const std::vector<std::string>& digests) {
        InputPlan plan = node.plan(jobId, inputs, digests);
        if (!plan.forget.empty())
            forget(plan.forget);
        net::GraphTask task{{nextTask++, 1}, boost::json::object{}, plan.following, plan.refs, {}};
        bytesSent += bytesOf(plan.following);
        auto parsed = net::parseGraphTask(net::toMessage(task));
        if (!parsed)
            return tl::unexpected(parsed.error());
        return volunteer.resolve(*parsed);
    }
    void forget(const std::vector<std::string>& digests) {
        auto parsed = net::parseForgetInputs(net::toMessage(net::ForgetInputs{digests}).control);
        QVERIFY(parsed);
        volunteer.forget(parsed->digests);
    }
};

std::vector<std::string> digestsOf(const std::vector<TensorPtr>& inputs,
                                   const std::vector<bool>& named) {
    std::vector<std::string> digests;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        digests.push_back(named[i] ? net::tensorDigest(*inputs[i]) : std::string());
    return digests;
}

} // namespace

class TestSentInputs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void digestsCoverDtypeAndShape();
    void sharedInputTravelsOnce();
    void evictionStaysWithinTheBudget();
    void endedJobsAreForgotten();
    void inputLargerThanTheBudgetTravelsEveryTime();
    void volunteerRefusesWhatItDoesNotKeep();
    void volunteerRefusesAWrongDigest();
};

void TestSentInputs::digestsCoverDtypeAndShape() {
    auto flat = core::Tensor::allocate(core::DType::F32, {4}).value();
    auto square = core::Tensor::allocate(core::DType::F32, {2, 2}).value();
    auto ints = core::Tensor::allocate(core::DType::I32, {4}).value();
    std::memset(flat.bytes().data(), 0, flat.byteSize());
    std::memset(square.bytes().data(), 0, square.byteSize());
    std::memset(ints.bytes().data(), 0, ints.byteSize());
    QVERIFY(net::tensorDigest(flat) != net::tensorDigest(square));
    QVERIFY(net::tensorDigest(flat) != net::tensorDigest(ints));
    QVERIFY(net::isDigestHex(net::tensorDigest(flat)));
    QCOMPARE(net::tensorDigest(flat), net::tensorDigest(flat));
    QVERIFY(!net::isDigestHex(std::string(64, 'A')));
}

void TestSentInputs::sharedInputTravelsOnce() {
    Connection connection(1 << 20);
    const TensorPtr params = tensorOf(4096, 0.5f);
    std::int64_t sliceBytes = 0;
    for (int task = 0; task < 8; ++task) {
        const std::vector<TensorPtr> inputs{params, tensorOf(256, static_cast<float>(task))};
        sliceBytes += static_cast<std::int64_t>(inputs[1]->byteSize());
        auto resolved = connection.send("g-1", inputs, digestsOf(inputs, {true, false}));
        QVERIFY2(resolved, resolved ? "" : resolved.error().message.c_str());
        QCOMPARE(resolved->size(), inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i)
            QVERIFY(sameValues((*resolved)[i], inputs[i]));
    }
    // The parameters once, every batch slice every time.
    QCOMPARE(connection.bytesSent, static_cast<std::int64_t>(params->byteSize()) + sliceBytes);
    QCOMPARE(connection.volunteer.heldBytes(), static_cast<std::int64_t>(params->byteSize()));
    QCOMPARE(connection.node.heldBytes(), connection.volunteer.heldBytes());
}

void TestSentInputs::evictionStaysWithinTheBudget() {
    const TensorPtr a = tensorOf(1000, 1), b = tensorOf(1000, 2), c = tensorOf(1000, 3);
    Connection connection(static_cast<std::int64_t>(2 * a->byteSize())); // room for two
    const std::vector<std::vector<TensorPtr>> frames{{a}, {b}, {a}, {c}, {b}, {a}, {c}, {c}};
    for (const auto& inputs : frames) {
        auto resolved = connection.send("g-1", inputs, digestsOf(inputs, {true}));
        QVERIFY2(resolved, resolved ? "" : resolved.error().message.c_str());
        QVERIFY(sameValues(resolved->front(), inputs.front()));
        QVERIFY(connection.volunteer.heldBytes() <= connection.volunteer.budgetBytes());
        QCOMPARE(connection.node.heldBytes(), connection.volunteer.heldBytes());
    }
    // a, b travel; a is kept; c evicts b (least recently used); b evicts a; a evicts c; c evicts b.
    QCOMPARE(connection.bytesSent, static_cast<std::int64_t>(6 * a->byteSize()));
}

void TestSentInputs::endedJobsAreForgotten() {
    Connection connection(1 << 20);
    const TensorPtr shared = tensorOf(512, 7), own = tensorOf(512, 8);
    QVERIFY(connection.send("g-1", {shared, own}, digestsOf({shared, own}, {true, true})));
    QVERIFY(connection.send("g-2", {shared}, digestsOf({shared}, {true})));
    const auto dropped = connection.node.forgetJob("g-1");
    QCOMPARE(dropped, std::vector<std::string>{net::tensorDigest(*own)}); // g-2 still uses shared
    connection.forget(dropped);
    QCOMPARE(connection.volunteer.size(), std::size_t{1});
    QCOMPARE(connection.node.forgetJob("g-2"),
             std::vector<std::string>{net::tensorDigest(*shared)});
    connection.forget({net::tensorDigest(*shared)});
    QCOMPARE(connection.volunteer.heldBytes(), std::int64_t{0});
    QCOMPARE(connection.node.heldBytes(), std::int64_t{0});
}

void TestSentInputs::inputLargerThanTheBudgetTravelsEveryTime() {
    const TensorPtr big = tensorOf(4096, 1);
    Connection connection(1024);
    for (int i = 0; i < 3; ++i) {
        auto resolved = connection.send("g-1", {big}, digestsOf({big}, {true}));
        QVERIFY(resolved);
        QVERIFY(sameValues(resolved->front(), big));
    }
    QCOMPARE(connection.bytesSent, static_cast<std::int64_t>(3 * big->byteSize()));
    QCOMPARE(connection.volunteer.heldBytes(), std::int64_t{0});
    // Nothing named: the frame is the protocol-3 one.
    QVERIFY(connection.node.plan("g-1", {big}, {net::tensorDigest(*big)}).refs.empty());
}

void TestSentInputs::volunteerRefusesWhatItDoesNotKeep() {
    KeptInputs volunteer(1 << 20);
    const TensorPtr params = tensorOf(64, 1);
    net::GraphTask task{{1, 1}, {}, {}, {net::InputRef{net::tensorDigest(*params), false}}, {}};
    auto refused = volunteer.resolve(task);
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::InvalidMessage);
    // Keeping past the announced budget is refused, and nothing is kept.
    KeptInputs small(16);
    net::GraphTask keep{
        {2, 1}, {}, {params}, {net::InputRef{net::tensorDigest(*params), true}}, {}};
    auto over = small.resolve(keep);
    QVERIFY(!over);
    QCOMPARE(over.error().code, ErrorCode::LimitExceeded);
    QCOMPARE(small.heldBytes(), std::int64_t{0});
}

void TestSentInputs::volunteerRefusesAWrongDigest() {
    KeptInputs volunteer(1 << 20);
    const TensorPtr params = tensorOf(64, 1), other = tensorOf(64, 2);
    net::GraphTask task{{1, 1}, {}, {other}, {net::InputRef{net::tensorDigest(*params), true}}, {}};
    auto refused = volunteer.resolve(task);
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::InvalidMessage);
    QCOMPARE(volunteer.size(), std::size_t{0});
}

QTEST_APPLESS_MAIN(TestSentInputs)
#include "test_sent_inputs.moc"
