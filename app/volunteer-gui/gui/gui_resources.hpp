// The icons and desktop entries compiled into the GUI library (resources/goblin.qrc). Call
// initGuiResources() before using a ":/goblin/…" path; repeated calls are harmless. Any thread.
#pragma once

namespace goblin::volunteer {

void initGuiResources();

} // namespace goblin::volunteer
