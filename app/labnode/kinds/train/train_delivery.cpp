#include "kinds/train/train_delivery.hpp"

#include <boost/json.hpp>

#include "kinds/train/round_step.hpp"
#include "kinds/train/train_store.hpp"

namespace goblin::labnode {

namespace json = boost::json;

JobState researcherState(JobState state) {
    return state == JobState::Retained ? JobState::Done : state;
}

net::JobDone trainJobDone(Database& db, const TrainingJob& job, std::int64_t requestId) {
    json::array history;
    for (const TrainRoundRow& round : trainRounds(db, job.id))
        history.push_back(roundRecordJson(round));
    json::object summary{{"kind", "train"},
                         {"state", jobStateName(researcherState(job.state))},
                         {"rounds", job.roundsDone},
                         {"first_round", job.submission.plan.firstRound},
                         {"optimizer_state", job.optimizerState.size()},
                         {"history", std::move(history)}};
    if (job.state == JobState::Failed || job.state == JobState::Cancelled)
        summary["error"] = job.error;
    std::vector<net::TensorPtr> tensors{std::make_shared<const core::Tensor>(job.params)};
    for (const core::Tensor& buffer : job.optimizerState)
        tensors.push_back(std::make_shared<const core::Tensor>(buffer));
    return net::JobDone{requestId, job.id, std::move(summary), std::move(tensors)};
}

} // namespace goblin::labnode
