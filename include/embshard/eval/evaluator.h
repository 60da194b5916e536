#pragma once
/**
 * @file evaluator.h
 * @brief The judge: what a plan costs on a task, per device, from a chosen backend.
 *
 *   compute   `sim`  — the analytic model (cost/analytic.h), modelled
 *             `cpu`  — each device's shard run in turn on this machine's fused CPU kernel
 *                      (profile/shard_timer.h), measured; `reference` the same on the scalar
 *                      reference kernel (slow; for checking)
 *             `cuda` — the same on a GPU, where embshard was built with CUDA and a GPU is visible
 *   comm      the link model of the task's topology (cost/link_model.h), modelled; or measured
 *             all-to-alls handed in by the caller (`measured_comm`, e.g. from
 *             `measure_plan_all_to_all` with one MPI rank per device: `mpirun -n D embshard
 *             eval --comm mpi`)
 *   memory    from the plan (plan_memory)
 *
 * Measured backends draw each table's lookups from its generative model: the pool table it came
 * from (`source_id` ≥ 0, pool `task.pool_seed`), else a model fitted to its statistics
 * (`model_from_stats`). They honour a plan's memory tiers: a shard with hbm_rows < its rows gets
 * RecShard's remap (data/remap.h), built from the access counts of the measured draw (or of
 * other draws: `remap=held_out`), so its first hbm_rows rows are its hottest (`measured_tier_lookups` counts what the
 * kernels then see); `cuda` keeps the other rows in mapped host memory (kernels/cuda_embedding_bag.h), while `cpu` and
 * `reference` have no UVM tier on this machine and the remap only re-orders rows. They run at their `batch` (default:
 * the task's) — a smaller batch keeps a 60-table task to minutes on a small machine; the result records the batch it
 * used, and the link model uses the same batch so compute and comm stay comparable.
 *
 * The plan is checked against the task first (`find_error_in_plan`); a bad plan is an Error.
 *
 * Memory tiers (paper 004 Table 5): every result of `evaluate_plan` also carries, per device, the
 * lookups per step served from HBM and from UVM, expected from the task's statistics whatever the
 * backend: a shard of rows [b, e) does num_indices · (e − b) / num_rows lookups (each column shard
 * repeats them), at the evaluated batch (× batch / task batch); the share h of the shard's first
 * hbm_rows rows (its hottest) is `sim_hbm_access_share` (cost/analytic.h), the rest go to UVM. The report
 * adds their totals and the UVM share, and the spread of the per-device embedding time
 * (fw_comp + bw_comp, and the per-device sum): min / max / mean / population std (paper 004
 * Table 3).
 */
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "embshard/core/context.h"
#include "embshard/cost/breakdown.h"
#include "embshard/cost/compute_model.h"
#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/cost/plan_judge.h"
#include "embshard/plan/plan.h"
#include "embshard/profile/all_to_all.h"
#include "embshard/profile/measure.h"

namespace embshard {

/**
 * Judge specs. A plan is judged by a cost model (eval/cost_model_registry.h) named by a spec:
 * `sim`, `sim:coefficients=FILE`, `neural:weights=F`, `measured:impl=cpu,repeats=9,…`, … ; the
 * names of the measured backends (`cpu`, `reference`, `cuda`) are short for `measured:impl=NAME`.
 * Every function below takes such a spec; the CLI's `--backend` and Python's `backend=` are one.
 */
inline constexpr const char* kSimJudge = "sim";

/**
 * The canonical spec of `judge` (file comment). Throws Error, prefixed "eval: ", for an unknown
 * judge or parameter, naming this build's backends, and for a backend this build lacks.
 */
[[nodiscard]] std::string judge_spec(const std::string& judge);

/**
 * `judge` with its parameter `key` set to `value`, where the judge's family declares `key`
 * (measured judges: batch, warmup, repeats, flush, trim, draw, remap; sim and measured:
 * input_comm, exchanges, index_bytes, length_bytes); unchanged where it does not — so a
 * command's --batch leaves `sim` (which runs at the task's batch) as it is.
 */
[[nodiscard]] std::string set_judge_value(const std::string& judge, const std::string& key, const std::string& value);

/** Expected lookups per step of one device, by the memory tier that serves them. */
struct DeviceLookups {
  double hbm = 0.0;
  double uvm = 0.0;
};

/** min / max / mean / population standard deviation of per-device values. */
struct Spread {
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  double stddev = 0.0;
};
[[nodiscard]] Spread spread_of(const std::vector<double>& values);

/** Per device, the lookups per step served by HBM and UVM at `batch_size` (file comment). */
[[nodiscard]] std::vector<DeviceLookups> tier_lookups(const Task& task, const Plan& plan, std::int64_t batch_size);

/**
 * Per device, the lookups a measured judge (`judge`: its batch, draw and remap; any other judge
 * as `measured`'s defaults) hands to the kernels (ShardTimer's batch, after the remap), counted by
 * tier: those below their shard's hbm_rows are HBM's. Nothing is timed; the kernels are not used. A
 * check that the measured backends run the plan's tiers: it follows `tier_lookups` up to sampling.
 */
[[nodiscard]] std::vector<DeviceLookups> measured_tier_lookups(const Task& task, const Plan& plan,
                                                               const std::string& judge);

struct EvalResult {
  CostBreakdown breakdown;
  std::int64_t batch_size = 0;  ///< batch the costs are for
  std::string backend;          ///< canonical spec of the compute backend
  double step_ms = 0.0;
  double max_sum_ms = 0.0;
  double balance = 0.0;
  double wall_ms = 0.0;  ///< time the evaluation took
  /** Per device, lookups per step by tier (evaluate_plan fills it; empty from eval_result_of). */
  std::vector<DeviceLookups> lookups;
};
/** Spread over devices of fw_comp + bw_comp (the embedding kernels' time per step). */
[[nodiscard]] Spread compute_spread(const EvalResult& result);
/** Share of all lookups served from UVM (0 without lookups). */
[[nodiscard]] double uvm_lookup_share(const EvalResult& result);

/** A result from a breakdown: the objectives folded from it (`wall_ms` left 0). */
[[nodiscard]] EvalResult eval_result_of(CostBreakdown breakdown, std::int64_t batch_size, std::string backend);

/** Names of the compute backends this build offers (sim, cpu, reference, and cuda if built). */
[[nodiscard]] std::vector<std::string> eval_backends();

/** `judge` with `key` set to `value` as `set_judge_value` does, unless the spec sets `key` itself. */
[[nodiscard]] std::string with_judge_default(const std::string& judge, const std::string& key,
                                             const std::string& value);

/** How `judge` counts the input all-to-all (its input_comm, index_bytes, length_bytes; defaults where absent). */
[[nodiscard]] InputCommOptions judge_input_comm(const std::string& judge);

/** `judge` for a 2D `plan`'s sharding group (`judge` itself for a 1D plan): a measured judge's
 *  batch is the group's share of the global one, as `evaluate_plan` judges it. */
[[nodiscard]] std::string group_judge(const Task& task, const Plan& plan, const std::string& judge);

/** The judge `judge` built for `task` (an unavailable backend fails here, before any work). */
[[nodiscard]] std::unique_ptr<CostModel> make_judge(const Task& task, const std::string& judge,
                                                    const Context& ctx = Context{});

/**
 * Evaluates `plan` on `task` with the judge `judge` (file comment). `measured_comm`, if not
 * empty, holds every device's measured forward and backward all-to-all (one entry per device, at
 * the judge's batch, CostModel::batch_size) and replaces the link model.
 */
[[nodiscard]] EvalResult evaluate_plan(const Task& task, const Plan& plan, const std::string& judge, const Context& ctx,
                                       std::span<const DeviceTiming> measured_comm = {});

/**
 * The judge `judge` for trainers (cost/plan_judge.h): evaluates with `evaluate_plan`, each draw
 * as the judge's `draw` where it has one. Fails now, on `reference_task`, for an unknown or
 * unbuilt backend.
 */
[[nodiscard]] PlanJudge plan_judge(const std::string& judge, const Task& reference_task);

/** The result as a JSON document (see docs/architecture.md, "eval report"). */
[[nodiscard]] std::string eval_result_json(const EvalResult& result, const Task& task, const Plan& plan);

/**
 * A fixed-width text table of the per-device breakdown (memory against each device's budget in
 * `topology`), the lookups by tier, the spreads and the objectives (docs/metrics.md defines each).
 */
[[nodiscard]] std::string eval_result_table(const EvalResult& result, const Topology& topology);

}  // namespace embshard
