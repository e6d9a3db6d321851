// Tests of the training job kind through the Coordinator (the real TrainingJobs on the real
// GraphJobs) with fake peers: honest volunteers train to a float64 recomputation of SGD's rounds;
// a liar's gradient is never applied and it is quarantined; a node restarted after a committed
// round finishes with an uninterrupted run's bits; a cancel keeps the committed rounds and cancels
// the round's graph job, also when it comes while the round is taken in; a round's graph job is
// the training job's (researchers and staff acting on it are told to act on the training job);
// a streamed round waits for its batch, and a misshapen batch is refused with nothing lost; a
// round that cannot be written tells the job's researcher why it waits, then commits once.
#include <QtTest/QtTest>

#include <functional>
#include <set>

#include "labnode/kinds/train/training_rig.hpp"
#include "store/job_requests.hpp"

using namespace goblin;
using namespace goblin::labnode;
using namespace goblin::labnode::testing;

namespace {

CoordinatorSettings settings() {
    CoordinatorSettings chosen; // two agreeing volunteers decide; the node settles disagreement
    chosen.trust.probationAudits = 0;
    chosen.trust.auditFloor = 0.0;
    chosen.trust.sharedAddressRate = 0.0;
    return chosen;
}

// A node, a researcher (token "tok") and two honest canonical volunteers on their own addresses.
struct Lab {
    NodeHarness node;
    FakeCluster cluster{node, settings()};
    std::shared_ptr<FakePeerLink> researcher = cluster.connectResearcher();
    FakeVolunteer& one = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.2");
    FakeVolunteer& two = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.3");

    Lab() = default;
    Lab(const std::string& db, const std::string& blobs) : node(db, blobs) {}

    // Every volunteer answers its tasks honestly until `done` (checked before they answer).
    bool runUntil(const std::function<bool()>& done) {
        return node.waitUntil([&] {
            if (done())
                return true;
            for (auto& entry : cluster.volunteers)
                cluster.answer(entry.second, honestStep);
            return false;
        });
    }
    bool finished() const { return researcher->count("job_done") == 1; }
    std::string job() const {
        return std::string(
            researcher->sentOfType("job_accepted").at(0).control.at("job").as_string());
    }
    // Submits the training, lets round 0 commit and waits for round 1's tasks to be out: the job
    // (empty after the deadline).
    std::string inSecondRound(const TrainData& data) {
        cluster.fromResearcher(submitTrain(data));
        if (!runUntil([&] { return researcher->count("train_round") == 1; }) ||
            !node.waitUntil(
                [&] { return one.link->count("task") == 4 && two.link->count("task") == 4; }))
            return {};
        return job();
    }
    std::string sql(const std::string& query) {
        auto statement = node.store.database().prepare(query);
        return statement.step().value_or(false) ? statement.columnText(0) : std::string("?");
    }
    void request(const char* type, std::int64_t id, const std::string& job) {
        cluster.fromResearcher(control({{"type", type}, {"id", id}, {"job", job}}));
    }
};

std::vector<float> paramsOf(const net::Message& done) {
    return valuesOf(*done.tensors.at(0));
}

// Trained whole by honest volunteers: the final parameters (empty after the deadline).
std::vector<float> honestRun(const TrainData& data) {
    Lab lab;
    lab.cluster.fromResearcher(submitTrain(data));
    if (!lab.runUntil([&] { return lab.finished(); }))
        return {};
    return paramsOf(lab.researcher->sentOfType("job_done").at(0));
}

std::vector<std::int64_t> roundsReported(const FakePeerLink& researcher) {
    std::vector<std::int64_t> rounds;
    for (const auto& message : researcher.sentOfType("train_round"))
        rounds.push_back(message.control.at("round").at("round").to_number<std::int64_t>());
    return rounds;
}

// The largest |float32 − float64| over the parameters.
double distance(const std::vector<float>& got, const std::vector<double>& want) {
    double most = got.size() == want.size() ? 0 : std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        most = std::max(most, std::abs(double(got[i]) - want[i]));
    return most;
}

std::string text(double value) {
    return std::to_string(value);
}

} // namespace

class TestTrainingJobs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void honestRoundsFollowFloat64Sgd();
    void liarsGradientIsNeverApplied();
    void restartAfterACommittedRoundReachesTheSameBits();
    void cancelKeepsCommittedRoundsAndCancelsTheRound();
    void aRoundIsActedOnOnlyThroughItsTrainingJob();
    void aCancelWhileTheNextRoundIsTakenInLeavesNoRoundRunningOrKept();
    void streamedRoundWaitsForItsBatchAndBadBatchLosesNothing();
    void aRoundThatCannotCommitSaysWhyItsJobWaits();
};

void TestTrainingJobs::honestRoundsFollowFloat64Sgd() {
    const TrainData data;
    Lab lab;
    lab.cluster.fromResearcher(submitTrain(data));
    QVERIFY(lab.runUntil([&] { return lab.finished(); }));
    const auto accepted = lab.researcher->sentOfType("job_accepted").at(0).control;
    QCOMPARE(accepted.at("kind").as_string(), "train");
    QCOMPARE(accepted.at("rounds").to_number<std::int64_t>(), kRounds);
    // train_round for every round (0-based on the wire) before job_done, in order.
    QCOMPARE(roundsReported(*lab.researcher), (std::vector<std::int64_t>{0, 1, 2}));
    const auto sent = lab.researcher->sent();
    const auto last = [&](std::string_view type) {
        return std::find_if(sent.rbegin(), sent.rend(),
                            [&](const auto& m) { return m.type() == type; }) -
               sent.rbegin();
    };
    QVERIFY(last("job_done") < last("train_round")); // job_done after the last train_round
    const net::Message done = lab.researcher->sentOfType("job_done").at(0);
    const auto& summary = done.control.at("summary").as_object();
    QCOMPARE(summary.at("state").as_string(), "done");
    QCOMPARE(summary.at("rounds").to_number<std::int64_t>(), kRounds);
    QCOMPARE(summary.at("history").as_array().size(), std::size_t(kRounds));
    QCOMPARE(done.tensors.size(), std::size_t{1}); // plain SGD keeps no optimizer state
    // The parameters within float32's derived bound of float64 SGD on the same batches; the
    // last step moves them much further than that bound, so a missing or extra step fails.
    const Float64Run want = sgdInFloat64(data, kRounds);
    const Float64Run before = sgdInFloat64(data, kRounds - 1);
    const std::vector<float> got = paramsOf(done);
    QVERIFY2(distance(got, want.params) <= want.bound,
             qPrintable(QString::fromStdString(text(distance(got, want.params)) + " > " +
                                               text(want.bound))));
    QVERIFY(distance(got, before.params) > 100 * want.bound);
    QVERIFY(want.bound < 1e-4); // a bound that tells something
    const auto records = lab.researcher->sentOfType("train_round");
    for (std::size_t r = 0; r < records.size(); ++r) {
        const auto& record = records[r].control.at("round").as_object();
        const double loss = record.at("loss").to_number<double>();
        QVERIFY2(std::abs(loss - want.losses[r]) <= want.lossBounds[r],
                 qPrintable(QString::fromStdString(text(loss) + " vs " + text(want.losses[r]))));
        QCOMPARE(record.at("tasks").to_number<std::int64_t>(), kBatch / kMicro);
        QCOMPARE(record.at("rejected").to_number<std::int64_t>(), std::int64_t{0});
    }
    QVERIFY(want.losses.back() < want.losses.front()); // it learns
    QCOMPARE(lab.sql("SELECT state || ' ' || rounds_done FROM train_jobs"), std::string("done 3"));
    // Each round: one task per micro-batch, both replicas accepted by agreement.
    QCOMPARE(queryInt(lab.node.store, "SELECT count(*) FROM graph_results WHERE verdict = "
                                      "'accepted' AND method = 'replica-agreement'"),
             kRounds * (kBatch / kMicro) * 2);
    // A second identical run gives the same bits.
    QCOMPARE(honestRun(data), got);
}

void TestTrainingJobs::liarsGradientIsNeverApplied() {
    const TrainData data;
    const std::vector<float> honest = honestRun(data);
    QCOMPARE(honest.size(), std::size_t(kDim));
    NodeHarness node;
    FakeCluster cluster(node, settings());
    auto researcher = cluster.connectResearcher();
    auto& liar = cluster.connectVolunteer(2, true, "cpu-reference", "10.0.0.1");
    for (const char* address : {"10.0.0.2", "10.0.0.3"})
        cluster.connectVolunteer(2, true, "cpu-reference", address);
    cluster.fromResearcher(submitTrain(data));
    QVERIFY(node.waitUntil([&] { return liar.link->count("task") >= 1; }));
    const std::string liarId = liar.id();
    QVERIFY(node.waitUntil([&] {
        for (auto& [peer, volunteer] : cluster.volunteers)
            cluster.answer(volunteer, peer == liar.peer ? lyingStep : honestStep);
        return researcher->count("job_done") == 1;
    }));
    QCOMPARE(paramsOf(researcher->sentOfType("job_done").at(0)), honest);
    QVERIFY(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'rejected' "
                                 "AND volunteer_id = '" +
                                     liarId + "'") >= 1);
    QCOMPARE(queryInt(node.store, "SELECT count(*) FROM graph_results WHERE verdict = 'accepted' "
                                  "AND volunteer_id = '" +
                                      liarId + "'"),
             std::int64_t{0});
    QVERIFY(quarantined(node, liarId));
    QVERIFY(liar.link->closed().has_value());
    QCOMPARE(liar.link->closed()->code, ErrorCode::Banned);
    std::int64_t rejected = 0, decided = 0;
    for (const auto& message : researcher->sentOfType("train_round")) {
        rejected += message.control.at("round").at("rejected").to_number<std::int64_t>();
        decided += message.control.at("round").at("node_decided").to_number<std::int64_t>();
    }
    QVERIFY(rejected >= 1); // the rounds' records say so too
    QVERIFY(decided >= 1);
}

void TestTrainingJobs::restartAfterACommittedRoundReachesTheSameBits() {
    const TrainData data;
    const std::vector<float> uninterrupted = honestRun(data);
    QCOMPARE(uninterrupted.size(), std::size_t(kDim));
    const NodeFiles files;
    std::string job, roundJob;
    std::int64_t decidedTask = 0;
    {
        Lab lab(files.db, files.blobs);
        lab.cluster.fromResearcher(submitTrain(data));
        QVERIFY(lab.runUntil([&] { return lab.researcher->count("train_round") == 1; }));
        job = lab.job();
        // Round 1 is out; both answer its first task only, and the node dies.
        QVERIFY(lab.node.waitUntil(
            [&] { return lab.one.link->count("task") == 4 && lab.two.link->count("task") == 4; }));
        roundJob = lab.sql("SELECT round_job FROM train_jobs WHERE id = '" + job + "'");
        QVERIFY(roundJob.starts_with("g-"));
        decidedTask =
            lab.one.link->sentOfType("task")[2].control.at("task").to_number<std::int64_t>();
        for (FakeVolunteer* volunteer : {&lab.one, &lab.two})
            for (const auto& frame : volunteer->link->sentOfType("task"))
                if (frame.control.at("task").to_number<std::int64_t>() == decidedTask)
                    lab.cluster.coordinator.onMessage(volunteer->peer, honestStep(frame));
        QVERIFY(lab.node.waitUntil([&] {
            return queryInt(lab.node.store, "SELECT count(*) FROM graph_tasks WHERE job_id = '" +
                                                roundJob + "' AND state = 'accepted'") == 1;
        }));
    }
    Lab lab(files.db, files.blobs);
    QVERIFY(lab.node.logged("training job " + job + " resumed after 1 committed round(s)"));
    lab.request("fetch", 3, job);
    QCOMPARE(lab.researcher->sentOfType("job_status").at(0).control.at("state").as_string(),
             "running");
    QVERIFY(lab.runUntil([&] { return lab.finished(); }));
    QCOMPARE(paramsOf(lab.researcher->sentOfType("job_done").at(0)), uninterrupted);
    QCOMPARE(roundsReported(*lab.researcher), (std::vector<std::int64_t>{1, 2}));
    const auto summary = lab.researcher->sentOfType("job_done")[0].control.at("summary");
    QCOMPARE(summary.at("history").as_array().size(), std::size_t(kRounds));
    // Re-attached to round 1's graph job (no other submitted), its decided task not computed
    // again: each volunteer computed round 1's other task and round 2's two.
    QCOMPARE(summary.at("history").at(1).at("graph_job").as_string(), roundJob);
    QCOMPARE(queryInt(lab.node.store, "SELECT count(*) FROM graph_jobs"), kRounds);
    for (FakeVolunteer* volunteer : {&lab.one, &lab.two}) {
        QCOMPARE(volunteer->link->count("task"), std::size_t{3});
        for (const auto& frame : volunteer->link->sentOfType("task"))
            QVERIFY2(frame.control.at("task").to_number<std::int64_t>() != decidedTask,
                     "a task decided before the restart was computed again");
    }
}

void TestTrainingJobs::cancelKeepsCommittedRoundsAndCancelsTheRound() {
    const TrainData data;
    Lab lab;
    const std::string job = lab.inSecondRound(data);
    QVERIFY(!job.empty());
    const std::string roundJob =
        lab.sql("SELECT round_job FROM train_jobs WHERE id = '" + job + "'");
    QVERIFY(roundJob.starts_with("g-"));
    lab.request("cancel", 9, job);
    QCOMPARE(lab.researcher->sentOfType("cancelled").at(0).control.at("state").as_string(),
             "cancelled");
    const auto failed = lab.researcher->sentOfType("job_failed");
    QCOMPARE(failed.size(), std::size_t{1});
    QCOMPARE(failed[0].control.at("code").as_string(), "cancelled");
    QCOMPARE(lab.sql("SELECT state || ' ' || rounds_done FROM train_jobs"),
             std::string("cancelled 1"));
    QCOMPARE(lab.sql("SELECT state FROM graph_jobs WHERE id = '" + roundJob + "'"),
             std::string("cancelled"));
    // The round's late answers are stale: nothing of it is applied.
    QVERIFY(lab.runUntil(
        [&] { return lab.one.verdicts().size() == 4 && lab.two.verdicts().size() == 4; }));
    for (FakeVolunteer* volunteer : {&lab.one, &lab.two})
        QCOMPARE(volunteer->verdicts().back(), std::string("stale"));
    QCOMPARE(lab.researcher->count("train_round"), std::size_t{1});
    // fetch delivers the committed round: round 0's parameters, state "cancelled".
    lab.request("fetch", 10, job);
    QCOMPARE(lab.researcher->sentOfType("job_status").at(0).control.at("state").as_string(),
             "cancelled");
    const auto done = lab.researcher->sentOfType("job_done");
    QCOMPARE(done.size(), std::size_t{1});
    const auto& summary = done[0].control.at("summary").as_object();
    QCOMPARE(summary.at("state").as_string(), "cancelled");
    QCOMPARE(summary.at("rounds").to_number<std::int64_t>(), std::int64_t{1});
    QCOMPARE(summary.at("history").as_array().size(), std::size_t{1});
    QVERIFY(std::string(summary.at("error").as_string()).find("cancelled") != std::string::npos);
    const Float64Run want = sgdInFloat64(data, 1);
    QVERIFY(distance(paramsOf(done[0]), want.params) <= want.bound);
}

void TestTrainingJobs::aRoundIsActedOnOnlyThroughItsTrainingJob() {
    const TrainData data;
    const std::vector<float> whole = honestRun(data);
    QCOMPARE(whole.size(), std::size_t(kDim));
    Lab lab;
    const std::string job = lab.inSecondRound(data);
    QVERIFY(!job.empty());
    const std::string committed =
        lab.sql("SELECT graph_job FROM train_rounds WHERE job_id = '" + job + "'");
    const std::string inFlight =
        lab.sql("SELECT round_job FROM train_jobs WHERE id = '" + job + "'");
    const auto ownerOf = [&](const std::string& group) {
        return lab.sql("SELECT owner_job || ' ' || owner_round FROM graph_jobs WHERE id = '" +
                       group + "'");
    };
    QCOMPARE(ownerOf(committed), job + " 0");
    QCOMPARE(ownerOf(inFlight), job + " 1");
    QVERIFY(lab.node.logged("graph job " + inFlight + " (round 1 of training job " + job +
                            ") accepted"));
    // The researcher acting on a round itself is told which job to act on; nothing happens.
    std::int64_t id = 20;
    for (const std::string type : {"fetch", "release", "cancel"})
        for (const std::string& group : {committed, inFlight}) {
            lab.request(type.c_str(), id, group);
            const auto errors = lab.researcher->sentOfType("error");
            const auto refused = std::find_if(errors.begin(), errors.end(), [&](const auto& e) {
                return e.control.at("id").template to_number<std::int64_t>() == id;
            });
            QVERIFY2(refused != errors.end(), (type + " " + group).c_str());
            const std::string message(refused->control.at("message").as_string());
            const std::string code(refused->control.at("code").as_string());
            QVERIFY2(code == "invalid_input", (type + " " + code + ": " + message).c_str());
            QVERIFY2(message.find("of training job " + job + ": " + type + " the training job") !=
                         std::string::npos,
                     message.c_str());
            ++id;
        }
    QCOMPARE(lab.researcher->count("job_status") + lab.researcher->count("released") +
                 lab.researcher->count("cancelled"),
             std::size_t{0});
    QCOMPARE(lab.sql("SELECT state FROM graph_jobs WHERE id = '" + inFlight + "'"),
             std::string("running"));
    // Its verification is the round's own: audit answers on the round's id.
    lab.request("audit", 30, committed);
    QVERIFY(lab.node.waitUntil([&] { return lab.researcher->count("audit_report") == 1; }));
    // Lab staff are refused alike.
    Database& db = lab.node.store.database();
    const auto cancel = requestJobAction(db, inFlight, JobAction::Cancel, 50);
    const auto purge = requestJobAction(db, committed, JobAction::Purge, 50);
    QVERIFY(cancel && purge);
    QVERIFY(lab.node.waitUntil(
        [&] { return jobRequestOutcome(db, *cancel) && jobRequestOutcome(db, *purge); }));
    QVERIFY(jobRequestOutcome(db, *cancel)
                ->find("round 1 of training job " + job + ": cancel the training job") !=
            std::string::npos);
    QVERIFY(jobRequestOutcome(db, *purge)
                ->find("round 0 of training job " + job + ": purge the training job") !=
            std::string::npos);
    // The researcher's list shows the training job alone.
    lab.cluster.fromResearcher(control({{"type", "list_jobs"}, {"id", 40}}));
    const auto lists = lab.researcher->sentOfType("job_list");
    const auto& jobs = lists.at(0).control.at("jobs").as_array();
    QCOMPARE(jobs.size(), std::size_t{1});
    QCOMPARE(jobs[0].at("job").as_string(), job);
    // Untouched, the training ends with an uninterrupted run's bits, every round its own group.
    QVERIFY(lab.runUntil([&] { return lab.finished(); }));
    QCOMPARE(paramsOf(lab.researcher->sentOfType("job_done").at(0)), whole);
    QCOMPARE(lab.sql("SELECT count(*) FROM graph_jobs WHERE owner_job = '" + job + "'"),
             std::to_string(kRounds));
}

void TestTrainingJobs::aCancelWhileTheNextRoundIsTakenInLeavesNoRoundRunningOrKept() {
    const TrainData data;
    Lab lab;
    lab.cluster.fromResearcher(submitTrain(data));
    // Round 0 commits and round 1 is handed to a worker to be taken in; the cancel comes before
    // (or, on a slow core, just after) the node holds it as a group.
    QVERIFY(lab.runUntil([&] { return lab.researcher->count("train_round") == 1; }));
    const std::string job = lab.job();
    lab.request("cancel", 9, job);
    QCOMPARE(lab.researcher->count("cancelled"), std::size_t{1});
    const auto groups = [&](const char* where) {
        return lab.sql("SELECT count(*) FROM graph_jobs WHERE owner_job = '" + job + "'" + where);
    };
    QVERIFY(lab.node.waitUntil([&] { return groups("") == "2"; }));
    lab.node.poll();
    QCOMPARE(groups(" AND state = 'running'"), std::string("0"));
    QCOMPARE(groups(" AND state = 'cancelled'"), std::string("1"));
    QCOMPARE(lab.sql("SELECT state || ' ' || rounds_done FROM train_jobs"),
             std::string("cancelled 1"));
    // Staff's purge of the training job takes both groups, the one no round record names too.
    Database& db = lab.node.store.database();
    const auto purge = requestJobAction(db, job, JobAction::Purge, 50);
    QVERIFY(purge);
    QVERIFY(lab.node.waitUntil([&] { return jobRequestOutcome(db, *purge).has_value(); }));
    QCOMPARE(jobRequestOutcome(db, *purge).value_or("?"), std::string("ok"));
    QCOMPARE(lab.sql("SELECT count(*) FROM graph_jobs"), std::string("0"));
    QCOMPARE(lab.sql("SELECT count(*) FROM graph_tasks"), std::string("0"));
    QCOMPARE(lab.sql("SELECT count(*) FROM train_jobs"), std::string("0"));
}

void TestTrainingJobs::streamedRoundWaitsForItsBatchAndBadBatchLosesNothing() {
    const TrainData data;
    const std::vector<float> whole = honestRun(data);
    QCOMPARE(whole.size(), std::size_t(kDim));
    Lab lab;
    lab.cluster.fromResearcher(submitTrain(data, true));
    const std::string waits = " waits for batch 1";
    QVERIFY(lab.runUntil([&] { return lab.node.logged(waits); }));
    const std::string job = lab.job();
    QCOMPARE(lab.researcher->count("train_round"), std::size_t{1});
    lab.node.poll();
    QCOMPARE(lab.one.link->count("task") + lab.two.link->count("task"), std::size_t{4});
    const auto batch = [&](std::int64_t id, std::int64_t k, core::Tensor x) {
        const std::int64_t first = (k * kBatch) % kSamples;
        lab.cluster.fromResearcher(net::toMessage(net::TrainBatch{
            id,
            job,
            k,
            false,
            {std::make_shared<const core::Tensor>(std::move(x)),
             std::make_shared<const core::Tensor>(rowsOf(data.y, first, kBatch))}}));
    };
    batch(20, 1, rowsOf(data.x, 0, kBatch - 1)); // 7 rows, not 8
    QVERIFY(lab.node.waitUntil([&] { return lab.researcher->count("error") == 1; }));
    const auto refused = lab.researcher->sentOfType("error").at(0).control;
    QCOMPARE(refused.at("id").to_number<std::int64_t>(), std::int64_t{20});
    QCOMPARE(refused.at("code").as_string(), "shape_mismatch");
    QVERIFY2(std::string(refused.at("message").as_string()).find("x of a batch") !=
                 std::string::npos,
             refused.at("message").as_string().c_str());
    QCOMPARE(lab.sql("SELECT state || ' ' || rounds_done FROM train_jobs"),
             std::string("running 1"));
    QCOMPARE(queryInt(lab.node.store, "SELECT count(*) FROM train_batches"), std::int64_t{0});
    // The right batch 1 then batch 2 (samples 8…15, then 0…7, as the whole data's rounds).
    batch(21, 1, rowsOf(data.x, kBatch, kBatch));
    batch(22, 2, rowsOf(data.x, 0, kBatch));
    QVERIFY(lab.runUntil([&] { return lab.finished(); }));
    std::set<std::int64_t> accepted;
    for (const auto& message : lab.researcher->sentOfType("batch_accepted"))
        accepted.insert(message.control.at("batch").to_number<std::int64_t>());
    QCOMPARE(accepted, (std::set<std::int64_t>{1, 2}));
    QCOMPARE(roundsReported(*lab.researcher), (std::vector<std::int64_t>{0, 1, 2}));
    QCOMPARE(paramsOf(lab.researcher->sentOfType("job_done").at(0)), whole);
    QCOMPARE(queryInt(lab.node.store, "SELECT count(*) FROM train_batches"), std::int64_t{0});
}

void TestTrainingJobs::aRoundThatCannotCommitSaysWhyItsJobWaits() {
    Lab lab;
    Database& db = lab.node.store.database();
    QVERIFY(db.execute("CREATE TEMP TRIGGER refuse_rounds BEFORE INSERT ON train_rounds "
                       "BEGIN SELECT RAISE(ABORT, 'the disk is full'); END"));
    lab.cluster.fromResearcher(submitTrain(TrainData{}));
    // The last progress message's reason, or "-" when none was sent.
    const auto lastWaiting = [&] {
        const auto progress = lab.researcher->sentOfType("progress");
        if (progress.empty())
            return std::string("-");
        const auto& control = progress.back().control;
        return control.contains("waiting") ? std::string(control.at("waiting").as_string())
                                           : std::string();
    };
    const std::string why = "round 0 was verified, but the node cannot write it to its database; "
                            "it tries again every second (the node's log says why)";
    QVERIFY(lab.runUntil([&] { return lastWaiting() == why; }));
    QVERIFY(lab.node.logged("waits: " + why));
    QCOMPARE(lab.researcher->count("train_round"), std::size_t{0});
    QCOMPARE(lab.sql("SELECT rounds_done FROM train_jobs"), std::string("0"));
    // Once it can be written the round commits once, the job computes again and finishes.
    QVERIFY(db.execute("DROP TRIGGER refuse_rounds"));
    QVERIFY(lab.runUntil([&] { return lab.finished(); }));
    QCOMPARE(roundsReported(*lab.researcher), (std::vector<std::int64_t>{0, 1, 2}));
}

QTEST_APPLESS_MAIN(TestTrainingJobs)
#include "test_training_jobs.moc"
