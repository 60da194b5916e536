#pragma once
/**
 * @file cost_model.h
 * @brief `CostModel`: what a whole plan costs — the per-device breakdown of cost/breakdown.h —
 *        as sharders and the evaluator see it, and a valid lower bound over all plans.
 *
 * A cost model is a `ComputeModel` (fw_comp / bw_comp of a device's shards, cost/compute_model.h)
 * and a `CommModel` (each device's all-to-alls, cost/comm_model.h); every breakdown is put
 * together the same way (`assemble_breakdown`), with the straggler wait and memory. Search code
 * may query the two parts directly (one device's shards, one set of dim sums) and assemble with
 * its own caching wrapper around `compute()`.
 *
 * Cost models are plug-ins like sharders: one `CostModelRegistry` (eval/cost_model_registry.h builds it
 * and `make_cost_model` creates from it) holds every member, each registered by the layer that
 * owns it:
 *
 *   sim (alias analytic)  the analytic compute model of the task's topology preset
 *                         (cost/analytic.h) and the link model at the task's batch — here
 *   neural:weights=F,…    neural compute (and, where trained for the task's device count, comm)
 *                         models from a weights file (cost/neural_cost.h)
 *   default               the committed neural weights where they were trained on the task's kind
 *                         of device, else `sim` (resolved in eval/cost_model_registry.cpp)
 *   measured:impl=…,…     the kernels timed on this machine plus the link model: the judges of
 *                         `eval --backend cpu|reference|cuda` (eval/evaluator.h)
 *
 * A built model's `spec()` is canonical and creates the same model again.
 *
 * `lower_bound` is a value no valid plan of the task can beat under this model (for `balance`,
 * which is maximised, it is an upper bound: 1). Sharders report it beside their plans so every
 * result carries its optimality gap.
 */
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "embshard/core/context.h"
#include "embshard/core/fingerprint.h"
#include "embshard/core/registry.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/breakdown.h"
#include "embshard/cost/comm_model.h"
#include "embshard/cost/compute_model.h"
#include "embshard/data/task.h"
#include "embshard/plan/plan.h"

namespace embshard {

/**
 * The breakdown of `plan` on `task`: compute from `compute` per device, the all-to-alls from
 * `comm`, straggler wait, memory. The plan must be valid for the task. A 2D plan is costed on its
 * sharding group's task (plan/sharding_groups.h), per rank of a group, with each rank's replica
 * sync added to ar_comm_ms; `compute` and `comm` must then be built for that group's task
 * (`make_cost_model(spec, sharding_group_task(task, plan.groups))`).
 */
[[nodiscard]] CostBreakdown assemble_breakdown(const Task& task, const Plan& plan, ComputeModel& compute,
                                               CommModel& comm, const Context& ctx);

/**
 * Sets every device's in_comm_ms / in_hidden_ms from its input all-to-all time `ms` under `mode`
 * (cost/breakdown.h; overlap hides up to the device's fw + bw compute, which must be filled).
 */
void apply_input_comm(std::span<const double> ms, InputCommMode mode, CostBreakdown& breakdown);

class CostModel {
 public:
  virtual ~CostModel() = default;
  /** Canonical spec, stored in plan provenance. */
  [[nodiscard]] virtual std::string spec() const = 0;
  [[nodiscard]] virtual ComputeModel& compute() = 0;
  [[nodiscard]] virtual CommModel& comm() = 0;
  /** A valid bound on `objective` over every plan of `task` (file comment); none if unknown. It
   *  may run on another thread while the model costs plans (joint computes it beside its search),
   *  so it reads no state that costing changes. */
  [[nodiscard]] virtual std::optional<double> lower_bound(const Task& task, Objective objective) const = 0;
  /**
   * An independent copy for another thread (search code that runs several chains at once), or
   * none when the model cannot be copied (measured models time kernels: one at a time). Models
   * need not be thread-safe; copies share nothing mutable.
   */
  [[nodiscard]] virtual std::unique_ptr<CostModel> clone() const { return nullptr; }
  /**
   * The same model built for another task — a 2D plan's sharding group (plan/sharding_groups.h),
   * whose devices and batch differ — or none when this model cannot be rebuilt so (search code
   * then keeps to 1D plans).
   */
  [[nodiscard]] virtual std::unique_ptr<CostModel> for_task(const Task&) const { return nullptr; }
  /** The batch its costs are for: the task's, or the batch a measured model runs. */
  [[nodiscard]] virtual std::int64_t batch_size(const Task& task) const { return task.workload.batch_size; }
  /** Whether it times real kernels (a measured judge): then one judgement at a time, and each is a draw. */
  [[nodiscard]] virtual bool measures() const { return false; }
  /** The breakdown of a valid plan: `assemble_breakdown` with this model's two parts. */
  [[nodiscard]] CostBreakdown estimate(const Task& task, const Plan& plan, const Context& ctx) {
    return assemble_breakdown(task, plan, compute(), comm(), ctx);
  }
};

/** The family of cost models and judges: each is built for a task (file comment). */
using CostModelRegistry = Registry<CostModel, const Task&>;

/**
 * The `hardware=match|any` parameter every plug-in built from a trained model declares (the
 * neural cost model, the DreamShard and AutoShard policies): match (default) requires `what` to
 * have been trained on the task's kind of device; any skips the check.
 */
[[nodiscard]] ParamSpec hardware_param(const std::string& what);

/**
 * Under `hardware=match`, a cost model whose coefficients were measured on one CPU (the `cpu`
 * judges: sim's built-in or file coefficients, the built-in neural weights) warns — once per
 * process for each message — when this machine's CPU model or last-level cache differs from
 * `calibrated_on`, naming both and how to calibrate here. `what` names the model.
 */
void warn_if_calibrated_elsewhere(const HardwareFingerprint& calibrated_on, const std::string& what,
                                  const Context& ctx);

/**
 * The coefficients `sim:coefficients=builtin` judges `task` with: for cpu devices this machine's
 * installed calibration (cost/machine_calibration.h) where there is one, else the built-in preset
 * of the topology (`sim_hardware_for`). The neural model prices sequence tables' extra output rows
 * with them too (cost/neural_cost.h).
 */
[[nodiscard]] SimHardware builtin_sim_hardware(const Task& task);

/**
 * Registers `sim` and its alias `analytic`:
 *   sim:coefficients=builtin|FILE,hardware=match|any,input_comm=…,index_bytes=…,length_bytes=…
 * coefficients=FILE loads a preset file (cost/analytic.h) for its device kind.
 */
void register_sim_cost_model(CostModelRegistry& registry);

}  // namespace embshard
