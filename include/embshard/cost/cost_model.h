#pragma once
/**
 * @file cost_model.h
 * @brief `CostModel`: what a whole plan costs — the per-device breakdown of cost/breakdown.h —
 *        as sharders and the evaluator see it, and a valid lower bound over all plans.
 *
 * Every cost model assembles a breakdown the same way (`assemble_breakdown`): each device's
 * shards go to a `ComputeModel` for fw_comp / bw_comp; the all-to-alls come from the link model
 * of the task's topology (cost/link_model.h) on the devices' summed output columns; the straggler
 * wait and memory complete it. Members (spec strings, `make_cost_model`):
 *
 *   sim      the analytic compute model of the task's topology preset (cost/analytic.h)
 *
 * `lower_bound` is a value no valid plan of the task can beat under this model (for `balance`,
 * which is maximised, it is an upper bound: 1). Sharders report it beside their plans so every
 * result carries its optimality gap.
 */
#include <memory>
#include <optional>
#include <string>

#include "embshard/core/context.h"
#include "embshard/cost/breakdown.h"
#include "embshard/cost/compute_model.h"
#include "embshard/plan/plan.h"

namespace embshard {

/**
 * The breakdown of `plan` on `task`: compute from `compute` per device, comm from the link model
 * at `batch_size`, straggler wait, memory. The plan must be valid for the task.
 */
[[nodiscard]] CostBreakdown assemble_breakdown(const Task& task, const Plan& plan,
                                               ComputeModel& compute, std::int64_t batch_size,
                                               const Context& ctx);

class CostModel {
 public:
  virtual ~CostModel() = default;
  /** Canonical spec, stored in plan provenance. */
  [[nodiscard]] virtual std::string spec() const = 0;
  /** The breakdown of a valid plan. */
  [[nodiscard]] virtual CostBreakdown estimate(const Task& task, const Plan& plan,
                                               const Context& ctx) = 0;
  /** A valid bound on `objective` over every plan of `task` (file comment); none if unknown. */
  [[nodiscard]] virtual std::optional<double> lower_bound(const Task& task,
                                                          Objective objective) const = 0;
};

/** Builds a cost model from its spec for `task`'s topology; throws Error listing the names. */
[[nodiscard]] std::unique_ptr<CostModel> make_cost_model(const std::string& spec, const Task& task);

}  // namespace embshard
