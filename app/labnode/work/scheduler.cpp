#include "work/scheduler.hpp"

#include <cassert>
#include <unordered_map>

#include <boost/asio/post.hpp>

#include "goblin/net/json_fields.hpp"
#include "goblin/net/messages/volunteer_messages.hpp"
#include "store/lease_store.hpp"

namespace goblin::labnode {

namespace asio = boost::asio;

namespace {

// The kind a result or task_error names: its "op" ("graph"; absent means matmul, the first kind).
// Volunteers older than the typed messages wrote "op":"matmul": any op no kind has is the first.
std::string_view replyOp(const boost::json::object& control) {
    const auto* op = control.if_contains("op");
    return op && op->is_string() ? std::string_view(op->get_string()) : std::string_view();
}

} // namespace

Scheduler::Scheduler(NodeContext& context, PeerRegistry& peers, VerdictPath& verdicts,
                     SchedulerSettings settings)
    : m_context(context), m_peers(peers), m_verdicts(verdicts), m_settings(settings),
      m_leaseTimer(context.core) {
    loadHistory();
}

void Scheduler::addKind(JobKind& kind) {
    m_kinds.push_back(&kind);
}

void Scheduler::start() {
    scheduleLeaseTimer();
}

void Scheduler::stop() {
    m_stopped = true;
    m_leaseTimer.cancel();
}

JobKind& Scheduler::kindOf(std::string_view op) {
    assert(!m_kinds.empty() && "a scheduler without job kinds");
    for (JobKind* kind : m_kinds)
        if (kind->taskOp() == op)
            return *kind;
    return *m_kinds.front();
}

bool Scheduler::anyQueued() const {
    for (const JobKind* kind : m_kinds)
        if (kind->hasQueued())
            return true;
    return false;
}

void Scheduler::wake() {
    if (m_pumpPosted || m_stopped)
        return;
    m_pumpPosted = true;
    asio::post(m_context.core, [this] {
        m_pumpPosted = false;
        pump();
    });
}

std::vector<Scheduler::Assignment> Scheduler::claimTasks(double deadline, DueOnNode& due) {
    std::vector<Assignment> assignments;
    std::unordered_map<std::uint64_t, int> claimed;
    bool progress = true;
    // Round-robin one task per volunteer per pass so every volunteer gets work.
    while (progress && anyQueued()) {
        progress = false;
        for (const Peer* volunteer : m_peers.volunteers()) {
            const VolunteerInfo& info = volunteer->volunteer;
            if (m_leases.countHeldBy(volunteer->id) + claimed[volunteer->id] >=
                m_history.slotsFor(info.volunteerId, info.slots))
                continue;
            for (JobKind* kind : m_kinds) {
                auto claim = kind->claimTaskFor(*volunteer, [&](std::int64_t task) {
                    return mayLease(*kind, task, *volunteer, due);
                });
                if (!claim)
                    continue;
                assert(!m_history.barred(kind->taskOp(), claim->task, info.volunteerId) &&
                       "a kind handed out a task its filter refused");
                assignments.push_back(
                    {kind, Lease{kind->taskOp(), claim->task, claim->attempt, volunteer->id,
                                 info.volunteerId, info.backend, deadline}});
                ++claimed[volunteer->id];
                progress = true;
                break;
            }
        }
    }
    return assignments;
}

void Scheduler::pump() {
    if (m_stopped || !anyQueued())
        return;
    ++m_pumps;
    const double now = m_context.clock();
    DueOnNode due;
    std::vector<Assignment> assignments = claimTasks(now + m_settings.leaseSeconds, due);
    for (const auto& [kind, task] : due)
        computeOnNode(*kind, task);
    if (assignments.empty())
        return;
    // Leases are durable before any task leaves, so attempt numbers never repeat.
    auto recorded = [&]() -> Expected<void> {
        auto transaction = Transaction::begin(m_context.store.database());
        if (!transaction)
            return tl::unexpected(transaction.error());
        for (const Assignment& assignment : assignments) {
            const Lease& lease = assignment.lease;
            if (auto ok =
                    recordLease(m_context.store.database(),
                                LeaseRecord{std::string(lease.kind), lease.task, lease.attempt,
                                            lease.volunteerId, now, lease.deadline});
                !ok)
                return ok;
        }
        return transaction->commit();
    }();
    if (!recorded) {
        m_context.log.error("could not record leases (" + recorded.error().message +
                            "); the tasks stay queued");
        for (const Assignment& assignment : assignments)
            assignment.kind->onLeaseLost(assignment.lease, LeaseLoss::NotSent,
                                         recorded.error().message);
        return;
    }
    for (const Assignment& assignment : assignments) {
        m_leases.add(assignment.lease);
        sendTask(*assignment.kind, assignment.lease);
    }
}

bool Scheduler::mayLease(JobKind& kind, std::int64_t task, const Peer& volunteer, DueOnNode& due) {
    // A task that expired too often (even before a restart) or that every connected volunteer
    // lost once is the node's.
    if (!triedTooOften(kind.taskOp(), task) &&
        !m_history.barred(kind.taskOp(), task, volunteer.volunteer.volunteerId))
        return true;
    if (volunteersGaveUp(kind.taskOp(), task, 0))
        due.emplace(&kind, task);
    return false;
}

void Scheduler::sendTask(JobKind& kind, const Lease& lease) {
    TaskFrame frame = kind.taskFrame(lease);
    const Peer* holder = m_peers.find(lease.peer);
    if (!holder)
        return; // it left; onPeerClosed ends the lease
    if (!frame.heavy) {
        auto message = frame.build();
        if (!message) {
            m_leases.take(lease.kind, lease.task, lease.attempt, lease.peer);
            return kind.onLeaseLost(lease, LeaseLoss::NotSent, message.error().message);
        }
        return holder->link->send(std::move(*message));
    }
    // Copying a tile's inputs is O(size): a worker builds the frame and sends it.
    asio::post(m_context.workers,
               [this, &kind, lease, link = holder->link, build = std::move(frame.build)] {
                   auto message = build();
                   if (message)
                       return link->send(std::move(*message));
                   asio::post(m_context.core, [this, &kind, lease, error = message.error()] {
                       if (m_leases.take(lease.kind, lease.task, lease.attempt, lease.peer))
                           kind.onLeaseLost(lease, LeaseLoss::NotSent, error.message);
                       wake();
                   });
               });
}

void Scheduler::onResult(std::uint64_t peer, net::Message message) {
    auto ref = net::parseTaskRef(message.control);
    if (!ref)
        return m_peers.close(peer, ref.error());
    JobKind& kind = kindOf(replyOp(message.control));
    auto lease = m_leases.take(kind.taskOp(), ref->task, ref->attempt, peer);
    if (!lease) {
        m_verdicts.sendStale(peer, ref->task, ref->attempt);
        return wake();
    }
    if (const Peer* holder = m_peers.find(peer))
        m_history.onAnswered(lease->volunteerId, holder->volunteer.slots);
    kind.onResult(*lease, std::move(message));
    wake();
}

void Scheduler::onTaskError(std::uint64_t peer, const boost::json::object& report) {
    auto ref = net::parseTaskRef(report);
    if (!ref)
        return m_peers.close(peer, ref.error());
    JobKind& kind = kindOf(replyOp(report));
    if (auto lease = m_leases.take(kind.taskOp(), ref->task, ref->attempt, peer))
        lose(kind, *lease, LeaseLoss::TaskError,
             net::requireString(report, "message").value_or("?"));
    wake();
}

void Scheduler::onPeerClosed(const Peer& peer, const Error& reason) {
    const auto held = m_leases.takeHeldBy(peer.id);
    if (peer.role == PeerRole::Volunteer && peer.ready)
        m_context.log.write(reason.code == ErrorCode::Banned ? LogLevel::Warning : LogLevel::Info,
                            "volunteer " + peer.volunteer.volunteerId + " disconnected (" +
                                reason.describe() + "); " + std::to_string(held.size()) +
                                " task(s) back in the queue");
    for (const Lease& lease : held)
        lose(kindOf(lease.kind), lease, LeaseLoss::Disconnected, reason.describe());
    wake();
}

void Scheduler::withdraw(std::string_view kind, std::int64_t task) {
    if (!m_leases.takeOfTask(kind, task).empty())
        wake();
}

void Scheduler::expireLeases() {
    for (const Lease& lease : m_leases.takeExpired(m_context.clock()))
        lose(kindOf(lease.kind), lease, LeaseLoss::Expired, "lease expired");
    pump();
}

int Scheduler::slotsOf(std::uint64_t peer) const {
    const Peer* volunteer = m_peers.find(peer);
    if (!volunteer)
        return 0;
    return m_history.slotsFor(volunteer->volunteer.volunteerId, volunteer->volunteer.slots);
}

void Scheduler::loadHistory() {
    // Finished jobs' losses are history nothing reads: the table stays the size of the live work.
    if (auto forgotten = forgetFinishedLeaseLosses(m_context.store.database()); !forgotten)
        m_context.log.error("could not forget finished jobs' lease losses (" +
                            forgotten.error().message + ")");
    for (const LeaseLossRecord& loss : leaseLosses(m_context.store.database()))
        m_history.remember(loss.kind, loss.task, loss.volunteerId, loss.why);
}

void Scheduler::lose(JobKind& kind, const Lease& lease, LeaseLoss why, const std::string& detail) {
    // A node shutting down drops every connection: that is nobody's loss. A volunteer that hangs
    // up soon after it took a lease is handing it back (a paused desktop), not hoarding it: it may
    // get the task again. Holding it past half the lease period and leaving counts as a loss.
    const double heldFor = m_context.clock() - (lease.deadline - m_settings.leaseSeconds);
    const bool handedBack =
        why == LeaseLoss::Disconnected && heldFor < 0.5 * m_settings.leaseSeconds;
    const bool counts = why != LeaseLoss::NotSent && !m_stopped && !handedBack;
    if (counts)
        remember(lease, why);
    else if (handedBack && !m_stopped)
        m_history.onHandedBack(lease.kind, lease.task);
    kind.onLeaseLost(lease, why, detail);
    if (!counts) {
        if (handedBack && !m_stopped &&
            m_history.handBacks(kind.taskOp(), lease.task) == m_settings.maxTaskHandBacks)
            computeOnNode(kind, lease.task);
        return;
    }
    if (m_observer)
        m_observer(lease, why);
    if (volunteersGaveUp(kind.taskOp(), lease.task, lease.peer))
        computeOnNode(kind, lease.task);
}

void Scheduler::remember(const Lease& lease, LeaseLoss why) {
    m_history.remember(lease.kind, lease.task, lease.volunteerId, why);
    if (why == LeaseLoss::Expired)
        if (const Peer* holder = m_peers.find(lease.peer))
            m_history.onExpired(lease.volunteerId, holder->volunteer.slots);
    // Durable, so a restarted node never gives the task back to this volunteer either.
    if (auto ok =
            recordLeaseLoss(m_context.store.database(),
                            LeaseLossRecord{std::string(lease.kind), lease.task, lease.attempt,
                                            lease.volunteerId, why, m_context.clock()});
        !ok)
        m_context.log.error("could not record the lost lease of task " +
                            std::to_string(lease.task) + " (" + ok.error().message +
                            "); it is remembered until a restart");
}

bool Scheduler::volunteersGaveUp(std::string_view kind, std::int64_t task,
                                 std::uint64_t leaving) const {
    if (triedTooOften(kind, task))
        return true;
    // Every volunteer still connected lost this task once: none may take it again.
    bool anyone = false;
    for (const Peer* volunteer : m_peers.volunteers()) {
        if (volunteer->id == leaving)
            continue;
        if (!m_history.barred(kind, task, volunteer->volunteer.volunteerId))
            return false;
        anyone = true;
    }
    return anyone;
}

bool Scheduler::triedTooOften(std::string_view kind, std::int64_t task) const {
    return m_history.expiries(kind, task) >= m_settings.maxTaskExpiries ||
           m_history.handBacks(kind, task) >= m_settings.maxTaskHandBacks;
}

void Scheduler::computeOnNode(JobKind& kind, std::int64_t task) {
    const int expiries = m_history.expiries(kind.taskOp(), task);
    const int handBacks = m_history.handBacks(kind.taskOp(), task);
    std::string line(kind.taskOp());
    line.append(" task ").append(std::to_string(task)).append(": ");
    if (expiries >= m_settings.maxTaskExpiries)
        line.append("its lease expired ").append(std::to_string(expiries)).append(" time(s)");
    else if (handBacks >= m_settings.maxTaskHandBacks)
        line.append("its volunteers hung up holding it ")
            .append(std::to_string(handBacks))
            .append(" time(s)");
    else
        line.append("no connected volunteer may take it again");
    m_context.log.warn(line.append("; the node computes it"));
    kind.computeOnNode(task);
}

void Scheduler::scheduleLeaseTimer() {
    m_leaseTimer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(m_settings.leaseCheckSeconds)));
    m_leaseTimer.async_wait([this](boost::system::error_code ec) {
        if (ec || m_stopped)
            return;
        expireLeases();
        scheduleLeaseTimer();
    });
}

} // namespace goblin::labnode
