#include "volunteer_state.hpp"

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

QString linkText(const EngineStatus& status) {
    switch (status.link) {
    case LinkState::Connecting:
        return QStringLiteral("connecting");
    case LinkState::Connected:
        return QStringLiteral("connected");
    case LinkState::Disconnected:
        return QStringLiteral("disconnected, retrying");
    case LinkState::Released:
        return QStringLiteral("paused: disconnected until resumed");
    case LinkState::Refused:
        return QStringLiteral("refused by the lab node");
    case LinkState::Stopped:
        return QStringLiteral("stopped");
    }
    return {};
}

QString stateTooltip(VolunteerState state, const ThrottleDecision& decision,
                     const EngineStatus& status) {
    QString text = QStringLiteral("GPU Goblin — ");
    switch (state) {
    case VolunteerState::Computing:
        if (status.running)
            return text + QStringLiteral("computing on %1 (task %2, %3 %)")
                              .arg(QString::fromStdString(status.backend))
                              .arg(status.running->task)
                              .arg(qRound(status.running->fraction * 100));
        return text + QStringLiteral("connected, waiting for work (%1)")
                          .arg(QString::fromStdString(status.backend));
    case VolunteerState::PausedByUser:
        return text + QStringLiteral("paused by you");
    case VolunteerState::Waiting:
        return text + QString::fromUtf8(describe(decision.reason).data(),
                                        static_cast<qsizetype>(describe(decision.reason).size()));
    case VolunteerState::Disconnected:
        return text +
               QStringLiteral("disconnected: %1").arg(QString::fromStdString(status.lastError));
    case VolunteerState::Error:
        return text + QStringLiteral("error: %1").arg(QString::fromStdString(status.lastError));
    }
    return text;
}

ComputePlan planFor(const ThrottleDecision& decision, bool draining) {
    return ComputePlan{decision.run, draining, decision.cpuThreads, decision.cpuDutyPercent};
}

} // namespace goblin::volunteer
