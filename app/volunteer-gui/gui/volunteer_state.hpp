// What the tray and the window show, derived from the throttle decision and the engine status;
// the compute plan the engine gets from a decision is planFor (throttle_plan.hpp). Pure
// functions, any thread.
#pragma once

#include <QString>

#include <optional>
#include <vector>

#include "compute_gate.hpp"
#include "engine_status.hpp"
#include "node_shares.hpp"
#include "throttle_plan.hpp"
#include "throttle_policy.hpp"

namespace goblin::volunteer {

enum class VolunteerState { Computing, PausedByUser, Waiting, Disconnected, Error };

VolunteerState volunteerState(const ThrottleDecision& decision, const EngineStatus& status,
                              bool linkFailed);
QString stateName(VolunteerState state); // "computing", "paused", … (also the icon's file name)
QString stateTooltip(VolunteerState state, const ThrottleDecision& decision,
                     const EngineStatus& status);
QString linkText(const EngineStatus& status);
// What the pause command reads in the tray menu and the window: "Resume" while the volunteer's
// pause holds, "Pause" otherwise.
QString pauseActionText(VolunteerState state);
// "core" for 1, "cores" otherwise; coreCount: "1 core", "4 cores".
QString coresWord(int cores);
QString coreCount(int cores);
// "CPU", "GPU" for an engine's backend name.
QString backendLabel(const std::string& backend);

// A node's connection for the nodes page: "connected", "retrying in 4 s (back-off) after: …",
// "refused: the node speaks another protocol version …".
QString nodeLinkText(const EngineStatus& status);

// The nodes' statuses summed into one: connected when any node is; counters and open tasks added;
// the first running task; parked when every node with a running task is parked.
EngineStatus combinedStatus(const std::vector<NodeStatus>& nodes);

} // namespace goblin::volunteer
