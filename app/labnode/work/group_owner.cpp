#include "work/group_owner.hpp"

namespace goblin::labnode {

std::string GroupOwner::describe() const {
    return owned() ? " (round " + std::to_string(round) + " of training job " + job + ")"
                   : std::string();
}

Error GroupOwner::refusal(std::string_view groupId, std::string_view action) const {
    std::string message = "job ";
    message.append(groupId)
        .append(" is round ")
        .append(std::to_string(round))
        .append(" of training job ")
        .append(job)
        .append(": ")
        .append(action)
        .append(" the training job (audit ")
        .append(groupId)
        .append(" reports the round's verification)");
    return Error{ErrorCode::InvalidInput, std::move(message)};
}

} // namespace goblin::labnode
