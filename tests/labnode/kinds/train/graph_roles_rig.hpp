// What the tests of a training job's rounds stand on: the roles the Coordinator builds for graph
// jobs (trust, verdict path, scheduler, admission, researcher desk, GraphJobs), a researcher
// watching on the audit-report protocol (peer kResearcherPeer) and two canonical volunteers on
// their own addresses; a job recorded as TrainingJobs records it at job_accepted; the core thread
// run one handler at a time while the volunteers answer. A test's rig adds the units it tests on
// top and joins the workers in its own destructor (before those units go). Core thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kinds/graph/graph_blobs.hpp"
#include "kinds/graph/graph_jobs.hpp"
#include "kinds/graph/job_audit_store.hpp"
#include "kinds/train/train_store.hpp"
#include "kinds/train/training_job.hpp"
#include "labnode/kinds/train/training_rig.hpp"
#include "node/admission_desk.hpp"

namespace goblin::labnode::testing {

inline constexpr std::uint64_t kResearcherPeer = 1;

// A volunteer's answer to a task frame.
using Answer = std::function<net::Message(const net::Message&)>;

inline TrustSettings agreementDecides() { // two agreeing volunteers decide; the node the rest
    TrustSettings chosen;
    chosen.probationAudits = 0;
    chosen.auditFloor = 0.0;
    chosen.sharedAddressRate = 0.0;
    return chosen;
}

struct GraphRoles {
    NodeHarness node;
    NodeContext context = node.context();
    PeerRegistry peers;
    TrustBook trust{context, agreementDecides()};
    VerdictPath verdicts{context, peers};
    Scheduler scheduler{context, peers, verdicts, SchedulerSettings{}};
    AdmissionDesk admission{context, peers, trust, AdmissionSettings{}};
    ResearcherDesk desk{context, peers};
    GraphJobs graphs{context, peers, desk, scheduler, verdicts, trust, GraphJobSettings{}};
    std::map<std::string, TrainingJob> jobs;
    std::shared_ptr<FakePeerLink> researcher = std::make_shared<FakePeerLink>();
    std::int64_t researcherId = node.store.addResearcher("ada@lab.example", "hash").value_or(0);
    std::map<std::uint64_t, FakeVolunteer> volunteers;

    GraphRoles(const std::string& db, const std::string& blobs) : node(db, blobs) {
        verdicts.setObserver([this](const VerdictRecord& verdict) { trust.onVerdict(verdict); });
        scheduler.addKind(graphs);
        desk.addKind(graphs);
        graphs.recover();
        Peer& peer = peers.add(kResearcherPeer, researcher, PeerRole::Researcher);
        peer.ready = true;
        peer.researcherId = researcherId;
        peer.protocol = kAuditReportProtocol;
        for (const std::uint64_t id : {2, 3}) {
            FakeVolunteer volunteer{id, std::make_shared<FakePeerLink>(), 0};
            volunteer.link->setAddress("10.0.0." + std::to_string(id));
            Peer& added = peers.add(id, volunteer.link, PeerRole::Volunteer);
            if (!admission.onHello(added, volunteerHello(2, true, "cpu-reference")))
                qFatal("a volunteer was not admitted");
            volunteers.emplace(id, std::move(volunteer));
        }
        scheduler.pump();
    }

    TrainingJob* find(const std::string& id) {
        auto found = jobs.find(id);
        return found == jobs.end() ? nullptr : &found->second;
    }

    // The job of `message` (submit_train) recorded and kept as TrainingJobs keeps it at
    // job_accepted, watched by the researcher; its first round not started.
    TrainingJob& accept(const std::string& id, const net::Message& message) {
        auto submission = parseTrainSubmission(message, core::graph::GraphLimits{});
        if (!submission)
            qFatal("the submission was refused: %s", submission.error().message.c_str());
        std::vector<core::Tensor> inputs;
        for (const net::TensorPtr& input : submission->inputs)
            inputs.push_back(*input);
        const core::Tensor params = inputs.at(submission->plan.paramsInput);
        auto storedInputs = storeTensors(node.blobs, inputs);
        auto storedParams = storeTensors(node.blobs, {params});
        const boost::json::object request{{"graph", message.control.at("graph")},
                                          {"train", message.control.at("train")}};
        if (!storedInputs || !storedParams ||
            !insertTrainJob(node.store.database(),
                            TrainJobRow{id,
                                        researcherId,
                                        JobState::Running,
                                        boost::json::serialize(request),
                                        boost::json::serialize(*storedInputs),
                                        boost::json::serialize(*storedParams),
                                        0,
                                        {},
                                        {},
                                        node.now},
                            node.now))
            qFatal("the job could not be stored");
        TrainingJob job;
        job.id = id;
        job.researcher = researcherId;
        job.params = params;
        job.storedParams = boost::json::serialize(*storedParams);
        job.submission = std::move(*submission);
        peers.watch(id, kResearcherPeer);
        return jobs.insert_or_assign(id, std::move(job)).first->second;
    }

    // Runs the core thread one handler at a time (a commit retried at once never ends a poll())
    // until `done`; before each, the volunteers answer their new tasks with `answer` (none when
    // it is empty).
    bool runUntil(const std::function<bool()>& done, const Answer& answer = honestStep) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline)
                return false;
            for (auto& [peer, volunteer] : volunteers)
                for (const net::Message& task :
                     answer ? volunteer.unanswered() : std::vector<net::Message>{}) {
                    ++volunteer.answered;
                    scheduler.onResult(peer, answer(task));
                }
            node.core.restart();
            if (node.core.poll_one() == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return true;
    }
    std::vector<std::int64_t> roundsReported() const {
        std::vector<std::int64_t> numbers;
        for (const auto& message : researcher->sentOfType("train_round"))
            numbers.push_back(message.control.at("round").at("round").to_number<std::int64_t>());
        return numbers;
    }
    std::string sql(const std::string& query) {
        auto statement = node.store.database().prepare(query);
        return statement.step().value_or(false) ? statement.columnText(0) : std::string("?");
    }
};

} // namespace goblin::labnode::testing
