// Plans a waiting graph job again for the volunteers connected now. A job is planned once, when
// it is submitted, for the volunteers connected then; when they leave and the ones that come lend
// too little for its tasks, it would wait forever. At the staff check, a running job that nothing
// of it has computed (no task with a result, a lease or a decision) and that no connected
// volunteer has the memory for is cut again (on a worker) with the budget the connected
// volunteers give; if every new task fits one of them, its task rows are replaced in one
// transaction and it runs as planned now. Tried once per budget. Core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kinds/graph/graph_book.hpp"
#include "kinds/graph/graph_intake.hpp"
#include "kinds/graph/graph_task_source.hpp"
#include "node/node_context.hpp"

namespace goblin::labnode {

class GraphReplan {
public:
    // Loads the planned-again job (its chunks and task rows) into the book, as at submission.
    using Reload = std::function<Expected<GraphJob*>(const GraphJobRow&, GraphIntake,
                                                     const std::vector<GraphTaskRow>&)>;

    GraphReplan(NodeContext& context, GraphBook& book, GraphTaskSource& tasks,
                const GraphIntakeSettings& settings, Reload reload);

    void check();

private:
    bool untouched(const GraphJob& job) const;
    void replan(const std::string& jobId, std::vector<GraphChunk> chunks, std::int64_t budget);

    NodeContext& m_context;
    GraphBook& m_book;
    GraphTaskSource& m_tasks;
    const GraphIntakeSettings& m_settings;
    Reload m_reload;
    std::map<std::string, std::int64_t> m_tried; // job → the budget it was last cut for
};

} // namespace goblin::labnode
