#include "volunteer_state.hpp"

#include <algorithm>

namespace goblin::volunteer {

VolunteerState volunteerState(const ThrottleDecision& decision, const EngineStatus& status,
                              bool linkFailed) {
    if (linkFailed || status.link == LinkState::Refused)
        return VolunteerState::Error;
    if (decision.reason == ThrottleReason::UserPaused)
        return VolunteerState::PausedByUser;
    if (!decision.run)
        return VolunteerState::Waiting;
    if (status.link != LinkState::Connected)
        return VolunteerState::Disconnected;
    return VolunteerState::Computing;
}

QString stateName(VolunteerState state) {
    switch (state) {
    case VolunteerState::Computing:
        return QStringLiteral("computing");
    case VolunteerState::PausedByUser:
        return QStringLiteral("paused");
    case VolunteerState::Waiting:
        return QStringLiteral("waiting");
    case VolunteerState::Disconnected:
        return QStringLiteral("disconnected");
    case VolunteerState::Error:
        return QStringLiteral("error");
    }
    return QStringLiteral("error");
}

QString coresWord(int cores) {
    return cores == 1 ? QStringLiteral("core") : QStringLiteral("cores");
}

QString coreCount(int cores) {
    return QStringLiteral("%1 %2").arg(cores).arg(coresWord(cores));
}

QString backendLabel(const std::string& backend) {
    if (backend.empty())
        return QStringLiteral("—");
    if (backend == "opencl-clblast")
        return QStringLiteral("GPU");
    if (backend == "cpu-eigen")
        return QStringLiteral("CPU");
    return QString::fromStdString(backend);
}

QString pauseActionText(VolunteerState state) {
    return state == VolunteerState::PausedByUser ? QStringLiteral("Resume")
                                                 : QStringLiteral("Pause");
}

QString linkText(const EngineStatus& status) {
    switch (status.link) {
    case LinkState::Connecting:
        return QStringLiteral("connecting");
    case LinkState::Connected:
        return QStringLiteral("connected");
    case LinkState::Disconnected:
        return QStringLiteral("disconnected, retrying");
    case LinkState::Released:
        return QStringLiteral("not computing now: disconnected until work may resume");
    case LinkState::Refused:
        return QStringLiteral("refused by the lab node");
    case LinkState::Stopped:
        return QStringLiteral("stopped");
    }
    return {};
}

namespace {

// Why no lab node is connected, without a dangling colon when no error was seen: before setup or
// with no node attached the link is stopped; a first attempt is still connecting.
QString disconnectedText(const EngineStatus& status) {
    if (status.link == LinkState::Stopped)
        return QStringLiteral("not set up yet: no lab node attached");
    if (status.link == LinkState::Connecting && status.lastError.empty())
        return QStringLiteral("connecting to the lab node");
    if (status.lastError.empty())
        return QStringLiteral("disconnected");
    return QStringLiteral("disconnected: %1").arg(QString::fromStdString(status.lastError));
}

} // namespace

QString stateTooltip(VolunteerState state, const ThrottleDecision& decision,
                     const EngineStatus& status) {
    QString text = QStringLiteral("GPU Goblin — ");
    switch (state) {
    case VolunteerState::Computing:
        if (status.running)
            return text + QStringLiteral("computing on %1 (task %2, %3 %)")
                              .arg(backendLabel(status.backend))
                              .arg(status.running->task)
                              .arg(qRound(status.running->fraction * 100));
        return text +
               QStringLiteral("connected, waiting for work (%1)").arg(backendLabel(status.backend));
    case VolunteerState::PausedByUser:
        return text + QStringLiteral("paused by you");
    case VolunteerState::Waiting:
        return text + QString::fromUtf8(describe(decision.reason).data(),
                                        static_cast<qsizetype>(describe(decision.reason).size()));
    case VolunteerState::Disconnected:
        return text + disconnectedText(status);
    case VolunteerState::Error:
        return text + QStringLiteral("error: %1").arg(QString::fromStdString(status.lastError));
    }
    return text;
}

QString nodeLinkText(const EngineStatus& status) {
    const QString error = QString::fromStdString(status.lastError);
    switch (status.link) {
    case LinkState::Disconnected:
        if (status.retryDelay.count() > 0)
            return QStringLiteral("retrying in %1 s (back-off) after: %2")
                .arg(static_cast<double>(status.retryDelay.count()) / 1000.0, 0, 'f', 1)
                .arg(error);
        return QStringLiteral("disconnected: %1").arg(error);
    case LinkState::Refused:
        if (error.contains(QLatin1String("version_mismatch")))
            return QStringLiteral("refused: the lab node speaks another protocol version (%1). "
                                  "Update GPU Goblin or ask the lab which version it runs; not "
                                  "retrying.")
                .arg(error.section(QStringLiteral("version_mismatch: "), 1));
        return QStringLiteral("refused: %1; not retrying").arg(error);
    default:
        return linkText(status);
    }
}

EngineStatus combinedStatus(const std::vector<NodeStatus>& nodes) {
    EngineStatus all;
    if (nodes.empty()) {
        all.link = LinkState::Stopped;
        return all;
    }
    // The best link wins: one connected node is enough to compute.
    constexpr LinkState kRank[] = {LinkState::Connected,    LinkState::Connecting,
                                   LinkState::Disconnected, LinkState::Released,
                                   LinkState::Refused,      LinkState::Stopped};
    all.link = LinkState::Stopped;
    int parkedRunning = 0, running = 0;
    for (const NodeStatus& node : nodes) {
        const EngineStatus& one = node.engine;
        for (LinkState rank : kRank) {
            if (rank == all.link)
                break;
            if (rank == one.link) {
                all.link = rank;
                break;
            }
        }
        if (all.lastError.empty() && one.link != LinkState::Connected)
            all.lastError = one.lastError;
        if (all.volunteerId.empty())
            all.volunteerId = one.volunteerId;
        if (all.backend.empty())
            all.backend = one.backend;
        EngineCounters& c = all.counters;
        c.computed += one.counters.computed;
        c.accepted += one.counters.accepted;
        c.rejected += one.counters.rejected;
        c.stale += one.counters.stale;
        c.failed += one.counters.failed;
        c.computeSeconds += one.counters.computeSeconds;
        c.bytesReceived += one.counters.bytesReceived;
        c.bytesSent += one.counters.bytesSent;
        all.tasksOpen += one.tasksOpen;
        if (one.running) {
            ++running;
            parkedRunning += one.parked ? 1 : 0;
            if (!all.running)
                all.running = one.running;
        }
        if (one.link == LinkState::Disconnected && all.link == LinkState::Disconnected)
            all.retryDelay = one.retryDelay;
    }
    all.parked = running > 0 && parkedRunning == running;
    return all;
}

} // namespace goblin::volunteer
