// Tests of a streamed training job's batches (kinds/train/streamed_batches) on the real blob store
// and database of a NodeHarness, with a fake researcher link: a batch is answered batch_accepted
// only once its blobs and its train_batches row are durable, and reaches the round that waits for
// it; a batch held or trained already is accepted again and stored once, one still being stored
// is answered as its first copy is (accepted once durable, or refused with it); out of order, of
// another shape or dtype, too far ahead of the rounds committed, past the job's rounds, for a job
// not the researcher's, not streamed, not running or whose data ended, it is refused with nothing
// stored or reserved; the end of the data is durable and cuts the job's rounds; a batch stored
// after its job ended is refused and its blobs deleted; a trained batch is dropped with the blobs
// no other batch holds, and an ended job's every batch and its end with their blobs; a restarted
// node reloads the batches it accepted and where the data ended, and takes the next round's batch.
#include <QtTest/QtTest>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "goblin/core/graph/graph.hpp"
#include "kinds/graph/graph_blobs.hpp"
#include "kinds/train/streamed_batches.hpp"
#include "kinds/train/train_store.hpp"
#include "labnode/kinds/train/training_rig.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

constexpr std::uint64_t kPeer = 7;

// Batch k's x [B, d] and y [B]: random, and different for every k.
struct Batch {
    core::Tensor x, y;
};

Batch batchOf(std::int64_t k) {
    const auto seed = static_cast<std::uint64_t>(100 + 2 * k);
    return Batch{goblin::testing::randomTensor(core::DType::F32, {kBatch, kDim}, seed),
                 goblin::testing::randomTensor(core::DType::F32, {kBatch}, seed + 1)};
}

// training_rig.hpp's streamed submit_train, of `rounds` rounds.
net::Message streamedSubmit(std::int64_t rounds) {
    net::Message message = submitTrain(TrainData{}, true);
    boost::json::object& train = message.control["train"].as_object();
    train["rounds"] = rounds;
    boost::json::array rates;
    for (std::int64_t round = 0; round < rounds; ++round)
        rates.push_back(0.125);
    train["optimizer"].as_object()["lr"] = std::move(rates);
    return message;
}

bool sameValues(const core::Tensor& got, const core::Tensor& want) {
    return got.dtype() == want.dtype() && got.shape() == want.shape() &&
           valuesOf(got) == valuesOf(want);
}

// A node (database and blob folder, in memory and a temporary folder unless given), a desk, one
// researcher connected as peer kPeer, and the jobs the hooks find; the hooks' calls are recorded.
struct Lab {
    NodeHarness node;
    NodeContext context = node.context();
    PeerRegistry peers;
    ResearcherDesk desk{context, peers};
    std::shared_ptr<FakePeerLink> link = std::make_shared<FakePeerLink>();
    std::int64_t researcher = node.store.addResearcher("ada@lab.example", "hash").value_or(0);
    std::map<std::string, TrainingJob> jobs;
    std::vector<std::string> started, ended; // the jobs startRound and dataEnded were called for
    StreamedBatches batches{
        context, peers, desk,
        StreamedBatches::Hooks{[this](const std::string& id) -> TrainingJob* {
                                   auto found = jobs.find(id);
                                   return found == jobs.end() ? nullptr : &found->second;
                               },
                               [this](TrainingJob& job) {
                                   job.waitingForBatch = false; // as the round starts
                                   started.push_back(job.id);
                               },
                               [this](TrainingJob& job) { ended.push_back(job.id); }}};

    Lab() : Lab(":memory:", {}) {}
    Lab(const std::string& db, const std::string& blobs) : node(db, blobs) {
        Peer& peer = peers.add(kPeer, link, PeerRole::Researcher);
        peer.ready = true;
        peer.researcherId = researcher;
        if (researcher == 0)
            qFatal("the researcher could not be stored");
    }

    // A streamed job of `rounds` rounds the node runs, before its first round commits (batch 0
    // came with it), not yet recorded in the store.
    TrainingJob& track(const std::string& id, std::int64_t rounds) {
        auto submission = parseTrainSubmission(streamedSubmit(rounds), core::graph::GraphLimits{});
        if (!submission)
            qFatal("the submission was refused: %s", submission.error().message.c_str());
        TrainingJob job;
        job.id = id;
        job.researcher = researcher;
        job.submission = std::move(*submission);
        return jobs.insert_or_assign(id, std::move(job)).first->second;
    }
    // The same, recorded in train_jobs as it is at job_accepted.
    TrainingJob& submit(const std::string& id, std::int64_t rounds) {
        TrainJobRow row;
        row.id = id;
        row.researcherId = researcher;
        row.request = "{}";
        row.inputs = "[]";
        row.params = "[]";
        if (!insertTrainJob(node.store.database(), row, node.now))
            qFatal("the job could not be stored");
        return track(id, rounds);
    }

    ResearcherRequest request() { return ResearcherRequest{kPeer, researcher, ++lastRequest}; }
    Expected<void> send(TrainingJob& job, std::int64_t k, const Batch& batch) {
        const ResearcherRequest asked = request();
        return batches.receive(asked,
                               net::TrainBatch{asked.requestId,
                                               job.id,
                                               k,
                                               false,
                                               {std::make_shared<const core::Tensor>(batch.x),
                                                std::make_shared<const core::Tensor>(batch.y)}});
    }
    Expected<void> end(TrainingJob& job, std::int64_t k) {
        const ResearcherRequest asked = request();
        return batches.receive(asked, net::TrainBatch{asked.requestId, job.id, k, true, {}});
    }
    // Sends batch k and waits for its answer: whether it was batch_accepted.
    bool stored(TrainingJob& job, std::int64_t k, const Batch& batch) {
        return send(job, k, batch).has_value() && node.waitUntil([&] { return answered(); }) &&
               accepted(lastRequest);
    }

    // What was sent to the researcher in answer to a request.
    std::vector<net::Message> answersTo(std::int64_t requestId) const {
        std::vector<net::Message> found;
        for (const net::Message& message : link->sent())
            if (message.control.at("id").to_number<std::int64_t>() == requestId)
                found.push_back(message);
        return found;
    }
    bool answered() const { return !answersTo(lastRequest).empty(); }
    bool accepted(std::int64_t requestId) const {
        const auto answers = answersTo(requestId);
        return answers.size() == 1 && answers[0].type() == "batch_accepted";
    }

    std::vector<TrainBatchRow> rows(const std::string& id) {
        return trainBatches(node.store.database(), id);
    }
    std::vector<std::int64_t> rowBatches(const std::string& id) {
        std::vector<std::int64_t> numbers;
        for (const TrainBatchRow& row : rows(id))
            numbers.push_back(row.batch);
        return numbers;
    }
    std::size_t blobFiles() const {
        std::size_t files = 0;
        for (const auto& entry : std::filesystem::recursive_directory_iterator(node.blobs.root()))
            files += entry.is_regular_file() ? 1 : 0;
        return files;
    }
    // Whether every blob of a stored batch is in the blob store (false for none).
    bool hasBlobs(const std::string& stored) const {
        const auto digests = storedDigests(stored);
        return !digests.empty() && std::all_of(digests.begin(), digests.end(),
                                               [&](const auto& d) { return node.blobs.has(d); });
    }
    bool hasNoBlob(const std::string& stored) const {
        const auto digests = storedDigests(stored);
        return !digests.empty() && std::none_of(digests.begin(), digests.end(),
                                                [&](const auto& d) { return node.blobs.has(d); });
    }
    // The stored batch reads back as `batch`.
    bool holds(const std::string& stored, const Batch& batch) const {
        auto loaded = loadTensors(node.blobs, stored);
        return loaded && loaded->size() == 2 && sameValues(loaded->at(0), batch.x) &&
               sameValues(loaded->at(1), batch.y);
    }

    std::int64_t lastRequest = 0;
};

// Refused with `code` and a message saying `what`.
bool refused(const Expected<void>& answer, ErrorCode code, const std::string& what) {
    if (answer) {
        qWarning("accepted; expected a refusal saying \"%s\"", what.c_str());
        return false;
    }
    if (answer.error().code != code || answer.error().message.find(what) == std::string::npos) {
        qWarning("refused with \"%s\"; expected one saying \"%s\"", answer.error().message.c_str(),
                 what.c_str());
        return false;
    }
    return true;
}

} // namespace

class TestStreamedBatches : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aBatchIsAcceptedOnceDurableAndReachesTheRoundWaitingForIt();
    void aBatchHeldOrTrainedAlreadyIsAcceptedAgainAndStoredOnce();
    void aResendWhileTheFirstCopyIsStoredGetsTheFirstCopysAnswer();
    void aBatchOutOfOrderIsRefusedWithNothingStoredOrReserved();
    void aBatchOfAnotherShapeOrDtypeIsRefusedWithNothingStored();
    void aBatchTooFarAheadIsRefusedUntilARoundCommits();
    void aBatchPastTheJobsRoundsIsRefused();
    void onlyTheResearchersRunningStreamedJobTakesBatches();
    void theEndOfTheDataIsDurableAndCutsTheJobsRounds();
    void theEndWhereTheNextRoundWouldStartEndsTheJob();
    void aBatchStoredAfterItsJobEndedIsRefusedAndItsBlobsDeleted();
    void aTrainedBatchIsDroppedWithTheBlobsNoOtherBatchHolds();
    void anEndedJobDropsEveryBatchAndItsEndButNoOtherJobs();
    void aRestartedNodeReloadsItsBatchesAndWhereTheDataEnded();
    void afterARestartTheBatchOfTheRoundThatWaitsIsStillTaken();
};

void TestStreamedBatches::aBatchIsAcceptedOnceDurableAndReachesTheRoundWaitingForIt() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    job.roundsDone = 1; // round 1 waits for batch 1
    job.waitingForBatch = true;
    const Batch one = batchOf(1);
    QVERIFY(lab.send(job, 1, one).has_value());
    // A worker stores it: nothing is answered or recorded yet, but batch 1 is taken.
    QCOMPARE(lab.link->sent().size(), std::size_t{0});
    QVERIFY(lab.rows(job.id).empty());
    QCOMPARE(job.nextBatch, std::int64_t{2});
    QVERIFY(lab.started.empty());
    QVERIFY(lab.node.waitUntil([&] { return lab.answered(); }));
    const auto answers = lab.answersTo(lab.lastRequest);
    QCOMPARE(answers.size(), std::size_t{1});
    QCOMPARE(answers[0].type(), std::string_view("batch_accepted"));
    QCOMPARE(answers[0].control.at("job").as_string(), "t-1");
    QCOMPARE(answers[0].control.at("batch").to_number<std::int64_t>(), std::int64_t{1});
    // Durable: its row and its blobs, which read back as sent; held for round 1, which started.
    const auto rows = lab.rows(job.id);
    QCOMPARE(rows.size(), std::size_t{1});
    QCOMPARE(rows[0].batch, std::int64_t{1});
    QVERIFY(lab.hasBlobs(rows[0].tensors));
    QVERIFY(lab.holds(rows[0].tensors, one));
    QCOMPARE(job.batches.size(), std::size_t{1});
    QCOMPARE(job.batches.at(1), rows[0].tensors);
    QCOMPARE(lab.started, std::vector<std::string>{"t-1"});

    // The next batch is held for its round; no round waits for it.
    const Batch two = batchOf(2);
    QVERIFY(lab.stored(job, 2, two));
    QCOMPARE(lab.rowBatches(job.id), (std::vector<std::int64_t>{1, 2}));
    QVERIFY(lab.holds(job.batches.at(2), two));
    QCOMPARE(lab.started.size(), std::size_t{1});
    QCOMPARE(job.nextBatch, std::int64_t{3});
}

void TestStreamedBatches::aBatchHeldOrTrainedAlreadyIsAcceptedAgainAndStoredOnce() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    QVERIFY(lab.stored(job, 1, batchOf(1)));
    const std::string held = job.batches.at(1);
    const std::size_t files = lab.blobFiles();
    // A researcher that re-attached resends from the rounds committed on: batch 0 (which came
    // with the job) and batch 1 (held) are answered at once and ignored.
    for (const std::int64_t k : {0, 1}) {
        QVERIFY(lab.send(job, k, batchOf(k)).has_value());
        QVERIFY2(lab.accepted(lab.lastRequest), qPrintable(QString::number(k)));
        QCOMPARE(lab.answersTo(lab.lastRequest)[0].control.at("batch").to_number<std::int64_t>(),
                 k);
    }
    lab.node.poll();
    QCOMPARE(lab.rowBatches(job.id), std::vector<std::int64_t>{1});
    QCOMPARE(lab.rows(job.id)[0].tensors, held);
    QCOMPARE(job.batches.at(1), held);
    QCOMPARE(lab.blobFiles(), files);
    QCOMPARE(job.nextBatch, std::int64_t{2});
}

void TestStreamedBatches::aResendWhileTheFirstCopyIsStoredGetsTheFirstCopysAnswer() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    // The researcher lost its connection while a worker stored batch 1, re-attached and sent it
    // again: the resend waits for the first copy, and neither is answered before it is durable.
    QVERIFY(lab.send(job, 1, batchOf(1)).has_value());
    const std::int64_t first = lab.lastRequest;
    QVERIFY(lab.send(job, 1, batchOf(1)).has_value());
    const std::int64_t resend = lab.lastRequest;
    QVERIFY(lab.answersTo(first).empty() && lab.answersTo(resend).empty());
    QVERIFY(lab.node.waitUntil([&] { return lab.answered(); }));
    QVERIFY(lab.accepted(first));
    QVERIFY(lab.accepted(resend));
    QCOMPARE(lab.rowBatches(job.id), std::vector<std::int64_t>{1});
    QVERIFY(lab.holds(job.batches.at(1), batchOf(1)));

    // When the first copy is refused (its job ended while it was stored), so is the resend: the
    // researcher was never told a batch the node does not hold was accepted.
    QVERIFY(lab.send(job, 2, batchOf(2)).has_value());
    const std::int64_t second = lab.lastRequest;
    QVERIFY(lab.send(job, 2, batchOf(2)).has_value());
    job.state = JobState::Cancelled;
    QVERIFY(lab.node.waitUntil([&] { return lab.answered(); }));
    for (const std::int64_t id : {second, lab.lastRequest}) {
        const auto answers = lab.answersTo(id);
        QCOMPARE(answers.size(), std::size_t{1});
        QCOMPARE(answers[0].type(), std::string_view("error"));
        QCOMPARE(answers[0].control.at("code").as_string(), "invalid_input");
    }
    QCOMPARE(lab.rowBatches(job.id), std::vector<std::int64_t>{1});
}

void TestStreamedBatches::aBatchOutOfOrderIsRefusedWithNothingStoredOrReserved() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    QVERIFY(refused(lab.send(job, 2, batchOf(2)), ErrorCode::InvalidInput,
                    "training job t-1 expects batch 1, not batch 2"));
    lab.node.poll();
    QCOMPARE(lab.link->sent().size(), std::size_t{0}); // the desk answers what receive returns
    QVERIFY(lab.rows(job.id).empty());
    QVERIFY(job.batches.empty());
    QCOMPARE(lab.blobFiles(), std::size_t{0});
    QCOMPARE(job.nextBatch, std::int64_t{1});
    QVERIFY(lab.stored(job, 1, batchOf(1))); // batch 1 is still the one taken
    QCOMPARE(lab.rowBatches(job.id), std::vector<std::int64_t>{1});
}

void TestStreamedBatches::aBatchOfAnotherShapeOrDtypeIsRefusedWithNothingStored() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    const Batch good = batchOf(1);
    Batch fewerRows = good;
    fewerRows.x = rowsOf(good.x, 0, kBatch - 1);
    Batch widerRows = good;
    widerRows.x = goblin::testing::randomTensor(core::DType::F32, {kBatch, kDim + 1}, 5);
    Batch doubles = good;
    doubles.y = goblin::testing::randomTensor(core::DType::F64, {kBatch}, 6);
    Batch longerY = good;
    longerY.y = goblin::testing::randomTensor(core::DType::F32, {kBatch + 1}, 7);
    for (const auto& [bad, what] :
         std::vector<std::pair<Batch, std::string>>{{fewerRows, "x of a batch"},
                                                    {widerRows, "x of a batch"},
                                                    {doubles, "y of a batch"},
                                                    {longerY, "y of a batch"}}) {
        QVERIFY(refused(lab.send(job, 1, bad), ErrorCode::ShapeMismatch, what));
        QCOMPARE(job.nextBatch, std::int64_t{1});
    }
    lab.node.poll();
    QCOMPARE(lab.link->sent().size(), std::size_t{0});
    QVERIFY(lab.rows(job.id).empty());
    QVERIFY(job.batches.empty());
    QCOMPARE(lab.blobFiles(), std::size_t{0});
    QVERIFY(lab.stored(job, 1, good)); // nothing lost: the right batch is taken
    QVERIFY(lab.holds(job.batches.at(1), good));
}

void TestStreamedBatches::aBatchTooFarAheadIsRefusedUntilARoundCommits() {
    constexpr std::int64_t kAhead = net::kStreamedBatchesAhead;
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kAhead + 4); // more rounds than batches held at once
    std::vector<std::int64_t> held;
    for (std::int64_t k = 1; k < kAhead; ++k) { // batch 0 came with the job
        QVERIFY(lab.stored(job, k, batchOf(k)));
        held.push_back(k);
    }
    const std::string limit = "training job t-1 holds at most " + std::to_string(kAhead) +
                              " batches: batch " + std::to_string(kAhead) +
                              " comes after round 0 commits";
    QVERIFY(refused(lab.send(job, kAhead, batchOf(kAhead)), ErrorCode::LimitExceeded, limit));
    lab.node.poll();
    QVERIFY(lab.answersTo(lab.lastRequest).empty());
    QCOMPARE(lab.rowBatches(job.id), held);
    QCOMPARE(job.nextBatch, kAhead);
    // Round 0 commits: one more fits, and no further.
    job.roundsDone = 1;
    QVERIFY(lab.stored(job, kAhead, batchOf(kAhead)));
    held.push_back(kAhead);
    QVERIFY(refused(lab.send(job, kAhead + 1, batchOf(kAhead + 1)), ErrorCode::LimitExceeded,
                    "comes after round 1 commits"));
    lab.node.poll();
    QCOMPARE(lab.rowBatches(job.id), held);
    QCOMPARE(job.nextBatch, kAhead + 1);
}

void TestStreamedBatches::aBatchPastTheJobsRoundsIsRefused() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    for (std::int64_t k = 1; k < kRounds; ++k)
        QVERIFY(lab.stored(job, k, batchOf(k)));
    QVERIFY(refused(lab.send(job, kRounds, batchOf(kRounds)), ErrorCode::InvalidInput,
                    "training job t-1 trains " + std::to_string(kRounds) + " round(s); batch " +
                        std::to_string(kRounds) + " is past them"));
    lab.node.poll();
    QVERIFY(lab.answersTo(lab.lastRequest).empty());
    QCOMPARE(lab.rows(job.id).size(), std::size_t(kRounds - 1));
    QCOMPARE(job.nextBatch, kRounds);
}

void TestStreamedBatches::onlyTheResearchersRunningStreamedJobTakesBatches() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    const Batch one = batchOf(1);
    TrainingJob gone = lab.track("t-gone", kRounds);
    lab.jobs.erase(gone.id); // released (or never the node's): the hooks no longer find it
    QVERIFY(refused(lab.send(gone, 1, one), ErrorCode::NotFound, "no job t-gone"));
    job.researcher = lab.researcher + 1; // another researcher's
    QVERIFY(refused(lab.send(job, 1, one), ErrorCode::NotFound, "no job t-1"));
    job.researcher = lab.researcher;
    job.submission.plan.streamed = false;
    QVERIFY(refused(lab.send(job, 1, one), ErrorCode::InvalidInput,
                    "training job t-1 took its data whole"));
    job.submission.plan.streamed = true;
    for (const JobState ended : {JobState::Done, JobState::Failed, JobState::Cancelled}) {
        job.state = ended;
        QVERIFY(refused(lab.send(job, 1, one), ErrorCode::InvalidInput,
                        "training job t-1 is " + std::string(jobStateName(ended)) +
                            "; it takes no more data"));
    }
    job.state = JobState::Running;
    job.dataEnded = true;
    QVERIFY(refused(lab.send(job, 1, one), ErrorCode::InvalidInput,
                    "the data of training job t-1 ended before batch 1"));
    lab.node.poll();
    QCOMPARE(lab.link->sent().size(), std::size_t{0});
    QVERIFY(lab.rows(job.id).empty());
    QCOMPARE(lab.blobFiles(), std::size_t{0});
    QCOMPARE(job.nextBatch, std::int64_t{1});
}

void TestStreamedBatches::theEndOfTheDataIsDurableAndCutsTheJobsRounds() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", 8);
    QVERIFY(lab.stored(job, 1, batchOf(1)));
    // An end other than at the next batch is refused like a batch.
    QVERIFY(refused(lab.end(job, 3), ErrorCode::InvalidInput, "expects batch 2, not batch 3"));
    QVERIFY(refused(lab.end(job, 1), ErrorCode::InvalidInput, "expects batch 2, not batch 1"));
    QVERIFY(!job.dataEnded);
    // The data ended before batch 2: recorded before it is answered, at once.
    QVERIFY(lab.end(job, 2).has_value());
    QVERIFY(lab.accepted(lab.lastRequest));
    QCOMPARE(lab.answersTo(lab.lastRequest)[0].control.at("batch").to_number<std::int64_t>(),
             std::int64_t{2});
    const auto rows = lab.rows(job.id);
    QCOMPARE(rows.size(), std::size_t{2});
    QCOMPARE(rows[1].batch, std::int64_t{2});
    QCOMPARE(rows[1].tensors, std::string()); // where the data ended
    QVERIFY(job.dataEnded);
    QCOMPARE(job.submission.plan.rounds, std::int64_t{2});
    QVERIFY(lab.node.logged("training job t-1: its data ended after 2 batch(es); it trains 2 "
                            "round(s), not 8"));
    QVERIFY(lab.ended.empty()); // no round waits: round 1 trains the batch held
    QVERIFY(refused(lab.send(job, 2, batchOf(2)), ErrorCode::InvalidInput,
                    "the data of training job t-1 ended before batch 2"));
    QCOMPARE(lab.rows(job.id).size(), std::size_t{2});

    // An end at the job's own last round changes nothing and stores nothing.
    TrainingJob& whole = lab.submit("t-2", kRounds);
    for (std::int64_t k = 1; k < kRounds; ++k)
        QVERIFY(lab.stored(whole, k, batchOf(k)));
    QVERIFY(lab.end(whole, kRounds).has_value());
    QVERIFY(lab.accepted(lab.lastRequest));
    QVERIFY(!whole.dataEnded);
    QCOMPARE(whole.submission.plan.rounds, kRounds);
    QCOMPARE(lab.rows(whole.id).size(), std::size_t(kRounds - 1));
}

void TestStreamedBatches::theEndWhereTheNextRoundWouldStartEndsTheJob() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", 8);
    job.roundsDone = 2; // rounds 0 and 1 trained, round 2 waits for batch 2
    job.nextBatch = 2;
    job.waitingForBatch = true;
    QVERIFY(lab.end(job, 2).has_value());
    QVERIFY(lab.accepted(lab.lastRequest));
    QCOMPARE(job.submission.plan.rounds, std::int64_t{2});
    QCOMPARE(lab.ended, std::vector<std::string>{"t-1"});
    QVERIFY(lab.started.empty());
    QCOMPARE(lab.rowBatches(job.id), std::vector<std::int64_t>{2});
}

void TestStreamedBatches::aBatchStoredAfterItsJobEndedIsRefusedAndItsBlobsDeleted() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", kRounds);
    job.roundsDone = 1;
    job.waitingForBatch = true;
    QVERIFY(lab.send(job, 1, batchOf(1)).has_value());
    // The job is cancelled while a worker stores the batch.
    job.state = JobState::Cancelled;
    job.waitingForBatch = false;
    lab.batches.dropAll(job);
    QVERIFY(lab.node.waitUntil([&] { return lab.answered(); }));
    const auto answers = lab.answersTo(lab.lastRequest);
    QCOMPARE(answers.size(), std::size_t{1});
    QCOMPARE(answers[0].type(), std::string_view("error"));
    QCOMPARE(answers[0].control.at("code").as_string(), "invalid_input");
    const std::string message(answers[0].control.at("message").as_string());
    QVERIFY2(message.find("training job t-1 no longer runs") != std::string::npos, message.c_str());
    QVERIFY(lab.node.logged("training job t-1: batch 1 refused"));
    QVERIFY(lab.rows(job.id).empty());
    QVERIFY(job.batches.empty());
    QCOMPARE(lab.blobFiles(), std::size_t{0}); // written by the worker, deleted since
    QVERIFY(lab.started.empty());
}

void TestStreamedBatches::aTrainedBatchIsDroppedWithTheBlobsNoOtherBatchHolds() {
    Lab lab;
    TrainingJob& job = lab.submit("t-1", 8);
    const Batch one = batchOf(1);
    Batch three = batchOf(3);
    three.x = one.x; // the same x (one blob), its own y
    QVERIFY(lab.stored(job, 1, one));
    QVERIFY(lab.stored(job, 2, batchOf(2)));
    QVERIFY(lab.stored(job, 3, three));
    const std::string first = job.batches.at(1), second = job.batches.at(2),
                      third = job.batches.at(3);
    const auto digests = storedDigests(first);
    QCOMPARE(digests.size(), std::size_t{2});
    QCOMPARE(storedDigests(third).at(0), digests[0]);

    // Round 1 committed.
    job.roundsDone = 2;
    lab.batches.dropTrained(job, 1);
    QCOMPARE(lab.rowBatches(job.id), (std::vector<std::int64_t>{2, 3}));
    QVERIFY(!job.batches.contains(1));
    QVERIFY(!lab.node.blobs.has(digests[1])); // batch 1's y
    QVERIFY(lab.node.blobs.has(digests[0]));  // x, which batch 3 holds too
    QVERIFY(lab.hasBlobs(second));
    QVERIFY(lab.holds(third, three));
    // A batch not held (trained and dropped, or never sent) drops nothing.
    const std::size_t files = lab.blobFiles();
    lab.batches.dropTrained(job, 1);
    lab.batches.dropTrained(job, 6);
    QCOMPARE(lab.rowBatches(job.id), (std::vector<std::int64_t>{2, 3}));
    QCOMPARE(lab.blobFiles(), files);
    QCOMPARE(job.batches.size(), std::size_t{2});
}

void TestStreamedBatches::anEndedJobDropsEveryBatchAndItsEndButNoOtherJobs() {
    Lab lab;
    TrainingJob& ending = lab.submit("t-1", 8);
    TrainingJob& other = lab.submit("t-2", 8);
    QVERIFY(lab.stored(ending, 1, batchOf(1)));
    QVERIFY(lab.stored(ending, 2, batchOf(2)));
    QVERIFY(lab.end(ending, 3).has_value());
    QVERIFY(lab.stored(other, 1, batchOf(11)));
    const std::vector<std::string> gone{ending.batches.at(1), ending.batches.at(2)};
    const std::string kept = other.batches.at(1);
    QCOMPARE(lab.rowBatches(ending.id), (std::vector<std::int64_t>{1, 2, 3}));

    ending.state = JobState::Failed;
    lab.batches.dropAll(ending);
    QVERIFY(lab.rows(ending.id).empty()); // its end too
    QVERIFY(ending.batches.empty());
    for (const std::string& stored : gone)
        QVERIFY(lab.hasNoBlob(stored));
    QCOMPARE(lab.rowBatches(other.id), std::vector<std::int64_t>{1});
    QVERIFY(lab.holds(kept, batchOf(11)));
    QCOMPARE(other.batches.at(1), kept);
}

void TestStreamedBatches::aRestartedNodeReloadsItsBatchesAndWhereTheDataEnded() {
    const NodeFiles files;
    std::map<std::int64_t, std::string> held;
    std::vector<std::string> ended;
    {
        Lab lab(files.db, files.blobs);
        TrainingJob& job = lab.submit("t-1", 8);
        TrainingJob& done = lab.submit("t-done", 8);
        for (std::int64_t k = 1; k <= 3; ++k)
            QVERIFY(lab.stored(job, k, batchOf(k)));
        QVERIFY(lab.end(job, 4).has_value());
        held = job.batches;
        QVERIFY(lab.stored(done, 1, batchOf(21)));
        ended.push_back(done.batches.at(1));
    } // the node stops
    Lab lab(files.db, files.blobs);
    // Rounds 0 and 1 had committed; batch 1's was deleted with the commit only in memory.
    TrainingJob& job = lab.track("t-1", 8);
    job.roundsDone = 2;
    lab.batches.load(job);
    QCOMPARE(job.batches.size(), std::size_t{2});
    QCOMPARE(job.batches.at(2), held.at(2));
    QCOMPARE(job.batches.at(3), held.at(3));
    QVERIFY(lab.holds(job.batches.at(2), batchOf(2)));
    QVERIFY(lab.holds(job.batches.at(3), batchOf(3)));
    QVERIFY(job.dataEnded);
    QCOMPARE(job.submission.plan.rounds, std::int64_t{4});
    QCOMPARE(lab.rowBatches(job.id), (std::vector<std::int64_t>{2, 3, 4}));
    QVERIFY(lab.hasNoBlob(held.at(1))); // trained: dropped on load
    QVERIFY(refused(lab.send(job, 4, batchOf(4)), ErrorCode::InvalidInput,
                    "the data of training job t-1 ended before batch 4"));

    // A job that had ended keeps none of its batches.
    TrainingJob& done = lab.track("t-done", 8);
    done.state = JobState::Done;
    done.roundsDone = 1;
    lab.batches.load(done);
    QVERIFY(done.batches.empty());
    QVERIFY(lab.rows(done.id).empty());
    QVERIFY(lab.hasNoBlob(ended.at(0)));
    QCOMPARE(lab.rowBatches(job.id), (std::vector<std::int64_t>{2, 3, 4})); // the other's stay
}

void TestStreamedBatches::afterARestartTheBatchOfTheRoundThatWaitsIsStillTaken() {
    const NodeFiles files;
    {
        Lab lab(files.db, files.blobs);
        lab.submit("t-1", kRounds); // round 0 commits; batch 1 never came before the node stopped
    }
    Lab lab(files.db, files.blobs);
    TrainingJob& job = lab.track("t-1", kRounds);
    job.roundsDone = 1;
    lab.batches.load(job);
    QVERIFY(job.batches.empty());
    QVERIFY(!job.dataEnded);
    job.waitingForBatch = true; // round 1 waits for batch 1 (TrainingRounds::start)
    // The researcher re-attaches and sends from the rounds committed on (job_status.done = 1).
    const Batch one = batchOf(1);
    QVERIFY(lab.send(job, 1, one).has_value());
    QVERIFY(lab.node.waitUntil([&] { return lab.answered(); }));
    QVERIFY(lab.accepted(lab.lastRequest));
    QCOMPARE(lab.rowBatches(job.id), std::vector<std::int64_t>{1});
    QVERIFY(lab.holds(job.batches.at(1), one));
    QCOMPARE(lab.started, std::vector<std::string>{"t-1"});
}

QTEST_APPLESS_MAIN(TestStreamedBatches)
#include "test_streamed_batches.moc"
