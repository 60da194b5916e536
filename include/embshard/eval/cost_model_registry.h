#pragma once
/**
 * @file cost_model_registry.h
 * @brief The registry of cost models and judges (cost/cost_model.h lists the members): what
 *        `--cost` of `plan` and `compare`, and the judge of `eval` and `compare`, are built from.
 *
 * It lives in the eval layer because its members come from three layers: `sim` (cost/
 * cost_model.h), `neural` (cost/neural_cost.h) and `measured` (eval/evaluator.h, the kernels
 * timed on this machine). `default` is resolved here: `neural` with the built-in weights where
 * they fit the task (`builtin_weights_fit`), else `sim`, so the neural model never calls back
 * into the registry.
 *
 *   measured:impl=cpu|reference|cuda,batch=0,warmup=2,repeats=5,flush=true,trim=0.2,draw=0,
 *            remap=in_sample|held_out
 *
 * times each device's shards on the kernels of `impl` at `batch` (0: the task's; the built model's
 * spec says the batch it used), with `profile/measure.h`'s discipline, on draw number `draw` of
 * the lookups, RecShard's remap ranked in or out of sample (evaluator.h); its comm is the link
 * model at the same batch, and it has no lower bound.
 */
#include <memory>
#include <string>

#include "embshard/core/context.h"
#include "embshard/cost/cost_model.h"
#include "embshard/data/task.h"

namespace embshard {

/** Every cost model and judge of this build. */
[[nodiscard]] const CostModelRegistry& cost_model_registry();

/**
 * Builds the cost model `spec` names for `task`. An unknown name lists the registered ones, an
 * unknown key the accepted ones; the model's `spec()` is canonical and builds it again.
 */
[[nodiscard]] std::unique_ptr<CostModel> make_cost_model(const std::string& spec, const Task& task,
                                                         const Context& ctx = Context{});

}  // namespace embshard
