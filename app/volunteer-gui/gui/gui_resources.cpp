#include "gui_resources.hpp"

#include <QtGlobal>

// Q_INIT_RESOURCE must run in the global namespace; a static library's resource initialiser is
// otherwise dropped by the linker when nothing names it.
static void initGoblinQrc() {
    Q_INIT_RESOURCE(goblin);
}

namespace goblin::volunteer {

void initGuiResources() {
    static const bool done = (initGoblinQrc(), true);
    (void)done;
}

} // namespace goblin::volunteer
