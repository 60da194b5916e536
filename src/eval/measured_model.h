#pragma once
// The measured compute backends (`cpu`, `reference`, `cuda`): each device's shards fused into one
// kernel call and timed with ShardBench. Private to src/eval; evaluator.h documents the behaviour.
#include <memory>

#include "embshard/cost/compute_model.h"
#include "embshard/eval/evaluator.h"
#include "embshard/kernels/embedding_bag.h"

namespace embshard::detail {

/** A measured compute model running `impl` at `options.batch_size` (0 = the task's batch). */
[[nodiscard]] std::unique_ptr<ComputeModel> make_measured_model(const Task& task,
                                                                kernels::EmbeddingBagImpl impl,
                                                                const EvalOptions& options);

}  // namespace embshard::detail
