// What the tray and the window show, derived from the throttle decision and the engine status;
// and the compute plan the engine gets from a decision. Pure functions, any thread.
#pragma once

#include <QString>

#include "compute_gate.hpp"
#include "engine_status.hpp"
#include "throttle_policy.hpp"

namespace goblin::volunteer {

enum class VolunteerState { Computing, PausedByUser, Waiting, Disconnected, Error };

VolunteerState volunteerState(const ThrottleDecision& decision, const EngineStatus& status,
                              bool linkFailed);
QString stateName(VolunteerState state); // "computing", "paused", … (also the icon's file name)
QString stateTooltip(VolunteerState state, const ThrottleDecision& decision,
                     const EngineStatus& status);
QString linkText(const EngineStatus& status);

// draining: "finish the current task, then pause" is under way.
ComputePlan planFor(const ThrottleDecision& decision, bool draining);

} // namespace goblin::volunteer
