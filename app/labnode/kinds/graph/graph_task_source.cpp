#include "kinds/graph/graph_task_source.hpp"

#include <algorithm>
#include <cmath>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "kinds/graph/bytes_text.hpp"

namespace goblin::labnode {

using net::Message;

namespace {

// The first volunteers to speak of omit_witnesses.
constexpr int kOmitWitnessesProtocol = 10;

// Cheap gates before any comparison: a replica with the wrong count, dtype or shape is wrong. A
// lease that said omit_witnesses may bring the researcher's outputs alone, or every output.
std::optional<std::string> malformed(const GraphChunk& chunk,
                                     const std::vector<net::TensorPtr>& outputs,
                                     bool witnessesOmitted) {
    const bool withoutWitnesses = witnessesOmitted && outputs.size() == chunk.researcherOutputs();
    if (!chunk.withWitnesses(outputs.size()) && !withoutWitnesses)
        return "expected " + std::to_string(chunk.tolerances.size()) + " output(s), got " +
               std::to_string(outputs.size());
    for (std::size_t o = 0; o < outputs.size(); ++o) {
        const auto& spec = chunk.tolerances[o].spec;
        if (outputs[o]->dtype() != spec.dtype)
            return "output " + std::to_string(o) + " is " +
                   std::string(core::wireName(outputs[o]->dtype())) + ", expected " +
                   std::string(core::wireName(spec.dtype));
        if (outputs[o]->shape() != spec.shape)
            return "output " + std::to_string(o) + " has the wrong shape";
    }
    return std::nullopt;
}

} // namespace

GraphTaskSource::GraphTaskSource(NodeContext& context, PeerRegistry& peers, Scheduler& scheduler,
                                 VerdictPath& verdicts, GraphBook& book, GraphDecisions& decisions,
                                 double secondOpinionWaitSeconds)
    : m_context(context), m_peers(peers), m_scheduler(scheduler), m_verdicts(verdicts),
      m_book(book), m_decisions(decisions), m_secondOpinions(secondOpinionWaitSeconds) {}

std::vector<const Peer*> GraphTaskSource::graphVolunteers() const {
    std::vector<const Peer*> volunteers = m_peers.volunteers();
    std::erase_if(volunteers, [](const Peer* peer) { return !peer->volunteer.graphs; });
    return volunteers;
}

VolunteerPool GraphTaskSource::volunteerPool() const {
    std::vector<std::int64_t> lent; // 0: not limited, the most of all
    for (const Peer* volunteer : graphVolunteers())
        lent.push_back(volunteer->volunteer.memoryBytes);
    const auto more = [](std::int64_t a, std::int64_t b) {
        return (a <= 0 ? INT64_MAX : a) > (b <= 0 ? INT64_MAX : b);
    };
    std::sort(lent.begin(), lent.end(), more);
    return VolunteerPool{static_cast<std::int64_t>(lent.size()),
                         lent.empty() ? 0 : std::max<std::int64_t>(0, lent[0]),
                         lent.size() < 2 ? 0 : std::max<std::int64_t>(0, lent[1])};
}

std::optional<std::string> GraphTaskSource::whyNoOtherOpinion(const GraphTask& task) const {
    if (m_book.state(task) != TaskState::Queued || task.involved.empty())
        return std::nullopt;
    bool other = false;
    bool fitting = false;
    for (const Peer* volunteer : graphVolunteers()) {
        const VolunteerInfo& info = volunteer->volunteer;
        if (task.involved.contains(info.volunteerId))
            continue;
        other = true;
        if (!m_book.fits(task, info))
            continue;
        fitting = true;
        if (!m_scheduler.history().barred(TaskVerdicts::kOp, task.id, info.volunteerId))
            return std::nullopt;
    }
    if (!other)
        return "every connected volunteer computed it already";
    if (!fitting)
        return "the other connected volunteers lend too little memory for it";
    return "the other connected volunteers may not take it again (they lost its lease)";
}

void GraphTaskSource::checkStarving() {
    std::map<std::int64_t, std::string> starving;
    for (std::int64_t taskId : m_book.taskIds()) {
        const GraphTask* task = m_book.task(taskId);
        if (task && m_book.jobOf(*task).state == JobState::Running)
            if (auto why = whyNoOtherOpinion(*task))
                starving.emplace(taskId, std::move(*why));
    }
    const auto waited = static_cast<std::int64_t>(std::ceil(m_secondOpinions.waitSeconds()));
    for (std::int64_t taskId : m_secondOpinions.update(starving, m_context.clock())) {
        m_context.log.warn("graph task " + std::to_string(taskId) + " waited " +
                           std::to_string(waited) + " s for a second volunteer (" +
                           starving.at(taskId) + "); the node computes it");
        computeOnNode(taskId);
    }
}

std::string GraphTaskSource::whyWaiting(const GraphJob& job) const {
    const auto volunteers = graphVolunteers();
    if (volunteers.empty())
        return {}; // the desk says so itself
    for (std::int64_t taskId : job.taskIds) {
        const GraphTask* task = m_book.task(taskId);
        if (!task || m_book.settled(*task) ||
            std::any_of(volunteers.begin(), volunteers.end(), [&](const Peer* volunteer) {
                return m_book.fits(*task, volunteer->volunteer);
            }))
            continue;
        const GraphChunk& chunk = job.chunks.at(task->chunk);
        return "no connected volunteer lends the memory its tasks need (one holds " +
               bytesRoundedUp(chunk.peakBytes) + "; " +
               (chunk.whyWhole.empty()
                    ? std::string("it was planned for the volunteers connected when it was "
                                  "submitted; the node plans it again for these when nothing "
                                  "of it has started")
                    : chunk.whyWhole + ": connect a bigger volunteer, or split it into more "
                                       "chunks") +
               ")";
    }
    for (std::int64_t taskId : job.taskIds) {
        const auto starving = m_secondOpinions.starving(taskId);
        if (!starving)
            continue;
        const double left =
            std::max(0.0, starving->since + m_secondOpinions.waitSeconds() - m_context.clock());
        return "task " + std::to_string(taskId) + " wants a second volunteer's opinion and " +
               starving->why + ": connect another volunteer, or the node computes it itself in " +
               std::to_string(static_cast<std::int64_t>(std::ceil(left))) + " s";
    }
    return {};
}

std::optional<TaskClaim> GraphTaskSource::claimFor(const Peer& peer, const TaskFilter& mayTake) {
    const VolunteerInfo& volunteer = peer.volunteer;
    if (!volunteer.graphs)
        return std::nullopt;
    // The volunteer holds its other graph tasks meanwhile (one running, the others waiting): a
    // task goes to it only where the memory it lends holds them all.
    if (m_claimed.pump != m_scheduler.pumps())
        m_claimed = ClaimedInPump{m_scheduler.pumps(), {}};
    VolunteerLoad held = m_claimed.loads[peer.id];
    for (const Lease& lease : m_scheduler.leasesOf(peer.id))
        if (const GraphTask* other = m_book.task(lease.task);
            other && lease.kind == TaskVerdicts::kOp)
            held += m_book.loadOf(*other);
    auto leased = m_book.leaseFor(
        volunteer, held,
        [this](std::int64_t taskId, const std::string& backend) {
            return m_scheduler.leasedOnBackend(TaskVerdicts::kOp, taskId, backend);
        },
        mayTake);
    if (!leased)
        return std::nullopt;
    GraphTask& task = *m_book.task(leased->task);
    m_claimed.loads[peer.id] += m_book.loadOf(task);
    task.involved.insert(volunteer.volunteerId);
    task.addresses.insert(volunteer.address);
    return TaskClaim{task.id, leased->attempt};
}

TaskFrame GraphTaskSource::frame(const Lease& lease) {
    GraphTask& task = *m_book.task(lease.task);
    const GraphJob& job = m_book.jobOf(task);
    const GraphChunk& chunk = job.chunks[task.chunk];
    // Only the computation: no job name, researcher or description reaches a volunteer.
    const Peer* holder = m_peers.find(lease.peer);
    net::GraphTask graphTask{net::TaskRef{task.id, lease.attempt},
                             job.chunkGraphs[task.chunk].as_object(),
                             chunk.inputs,
                             {},
                             chunk.gemmNodesFor(holder ? holder->protocol : 1)};
    if (holder && holder->volunteer.inputCacheBytes > 0) {
        // Built inline and sent at once, so the volunteer sees the frames in planning order.
        auto [sent, added] =
            m_sentInputs.try_emplace(lease.peer, holder->volunteer.inputCacheBytes);
        InputPlan plan = sent->second.plan(job.id, chunk.inputs, chunk.inputDigests);
        if (!plan.forget.empty())
            m_peers.send(lease.peer, net::toMessage(net::ForgetInputs{std::move(plan.forget)}));
        graphTask.inputs = std::move(plan.following);
        graphTask.inputRefs = std::move(plan.refs);
    }
    if (holder && holder->protocol >= kOmitWitnessesProtocol && chunk.witnesses > 0 &&
        opinionsWanted(job) > 1 && witnessesCarriedBesides(task, lease.attempt)) {
        graphTask.omitWitnesses = static_cast<std::int64_t>(chunk.witnesses);
        task.withoutWitnesses.insert(lease.attempt); // until its result or its loss
    }
    Message frame = net::toMessage(graphTask);
    return TaskFrame{[frame = std::move(frame)]() -> Expected<Message> { return frame; }, false};
}

bool GraphTaskSource::witnessesCarriedBesides(const GraphTask& task, std::int64_t attempt) const {
    for (const verify::Replica& replica : task.replicas)
        if (m_book.chunkOf(task).withWitnesses(replica.outputs.size()))
            return true;
    for (const Lease& other : m_scheduler.leasesOfTask(TaskVerdicts::kOp, task.id))
        if (other.attempt != attempt && !task.withoutWitnesses.contains(other.attempt))
            return true;
    return false;
}

void GraphTaskSource::forgetInputsOf(const std::string& jobId) {
    for (auto it = m_sentInputs.begin(); it != m_sentInputs.end();) {
        if (!m_peers.find(it->first)) { // that connection closed: its volunteer dropped them
            it = m_sentInputs.erase(it);
            continue;
        }
        if (auto digests = it->second.forgetJob(jobId); !digests.empty())
            m_peers.send(it->first, net::toMessage(net::ForgetInputs{std::move(digests)}));
        ++it;
    }
}

void GraphTaskSource::queueOpinion(GraphTask& task) {
    // Ask a volunteer that has not seen this task yet; with none connected, the node decides.
    for (const Peer* volunteer : graphVolunteers()) {
        if (!task.involved.contains(volunteer->volunteer.volunteerId) &&
            m_book.fits(task, volunteer->volunteer)) {
            m_book.wantOpinion(task, "one more opinion wanted");
            return m_scheduler.wake();
        }
    }
    m_decisions.computeOnNode(task);
}

void GraphTaskSource::onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail) {
    GraphTask* found = m_book.task(lease.task);
    if (!found)
        return;
    GraphTask& task = *found;
    task.withoutWitnesses.erase(lease.attempt);
    std::string what = detail;
    if (why == LeaseLoss::Disconnected) {
        // It may come back for it, unless the scheduler bars it (it held the lease too long).
        task.involved.erase(lease.volunteerId);
        what = "volunteer disconnected";
    } else if (why == LeaseLoss::TaskError) {
        what = "could not compute it: " + detail;
    }
    // A volunteer leaving is ordinary; one that let its lease expire or gave up on it is not.
    m_context.log.write(why == LeaseLoss::Disconnected ? LogLevel::Info : LogLevel::Warning,
                        "graph task " + std::to_string(task.id) + " attempt " +
                            std::to_string(lease.attempt) + " (" + lease.volunteerId +
                            "): " + what + "; asking another volunteer");
    if (!m_book.settled(task))
        queueOpinion(task);
}

void GraphTaskSource::computeOnNode(std::int64_t taskId) {
    GraphTask* task = m_book.task(taskId);
    if (!task || m_book.settled(*task))
        return;
    m_book.stopWanting(*task, "no volunteer may take it: the node computes it");
    m_decisions.computeOnNode(*task);
}

void GraphTaskSource::onResult(const Lease& lease, Message message) {
    GraphTask* found = m_book.task(lease.task);
    if (!found || m_book.settled(*found))
        return m_verdicts.sendStale(lease.peer, lease.task, lease.attempt);
    GraphTask& task = *found;
    const GraphChunk& chunk = m_book.chunkOf(task);
    verify::Replica replica;
    replica.attempt = lease.attempt;
    replica.volunteerId = lease.volunteerId;
    replica.backend =
        net::requireString(message.control, "backend").value_or(lease.backend).substr(0, 64);
    replica.computeSeconds = net::requireNumber(message.control, "compute_seconds").value_or(0.0);
    if (const Peer* sender = m_peers.find(lease.peer))
        replica.address = sender->volunteer.address;
    const bool witnessesOmitted = task.withoutWitnesses.erase(lease.attempt) > 0;
    if (auto wrong = malformed(chunk, message.tensors, witnessesOmitted))
        return m_decisions.rejectMalformed(task, lease, replica.backend, replica.computeSeconds,
                                           *wrong);
    replica.outputs = valuesOf(message.tensors);
    m_decisions.addReplica(task, std::move(replica), lease.peer);
}

} // namespace goblin::labnode
