#pragma once
/**
 * @file plan_judge.h
 * @brief How a trainer judges a real plan, handed in by its caller so that training (learn/)
 *        needs no evaluator: `plan_judge` (eval/evaluator.h) builds one from a backend's options.
 */
#include <cstdint>
#include <functional>
#include <string>

#include "embshard/core/context.h"
#include "embshard/cost/breakdown.h"
#include "embshard/data/task.h"
#include "embshard/plan/plan.h"

namespace embshard {

struct PlanJudge {
  std::string backend;          ///< the judge's canonical spec ("sim", "measured:impl=cpu,…")
  std::int64_t batch_size = 0;  ///< the batch its costs are for (on the trainer's first task)
  bool measures = false;        ///< it times real kernels: one judgement at a time
  /** The breakdown of `plan` on `task`, lookups of draw `draw` (a measured judge's batch). */
  std::function<CostBreakdown(const Task& task, const Plan& plan, std::uint64_t draw, const Context& ctx)> judge;
};

}  // namespace embshard
