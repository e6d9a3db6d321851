// Test helper for lifted graphs (plan/lifted_ends.hpp): the lifted graph's inputs made from the
// original graph's by each source's steps, with the reference executor's ops, as the lab node
// makes them.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "goblin/core/tensor.hpp"
#include "goblin/plan/lifted_ends.hpp"
#include "goblin/reference/graph_executor.hpp"

namespace goblin::testing {

inline std::vector<core::Tensor> madeInputs(const plan::LiftedEnds& lifted,
                                            const std::vector<core::Tensor>& inputs) {
    std::vector<core::Tensor> made;
    for (const plan::LiftedSource& source : lifted.inputs) {
        core::Tensor value = inputs.at(source.input);
        for (const plan::ViewStep& step : source.steps)
            value = reference::runOp(step.op, std::span(&value, 1), step.attrs).value();
        made.push_back(std::move(value));
    }
    return made;
}

} // namespace goblin::testing
