#pragma once
/**
 * @file compute_model.h
 * @brief Where a device's compute cost comes from: the interface every compute backend
 *        implements (`sim` analytic model, real kernels on `cpu` / `cuda`, later neural models),
 *        and the plan-to-device grouping they all start from.
 *
 * A device runs one fused kernel call over all of its shards (DreamShard / NeuroShard's
 * "multi-table" cost). A shard of table t contributes its columns as one fused table of width
 * `num_cols()` whose lookups are table t's lookups that fall in the shard's row range; column
 * shards therefore duplicate the table's lookups (the papers do). The copies of data-parallel
 * tables on a device run as a second fused call (TorchRec's dense batched kernel), each over its
 * device's B / replicas samples, with a dense backward: the whole table's gradient and optimizer
 * update (plan/plan.h).
 */
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/cost/breakdown.h"
#include "embshard/cost/comm_model.h"
#include "embshard/plan/plan.h"

namespace embshard {

/** A shard together with the task table it cuts. */
struct PlacedShard {
  int table = 0;  ///< index into task.workload.tables
  Shard shard;
  /// A copy of a data-parallel table: the number of copies (one per device), so that it serves
  /// 1 / replicas of the batch. 0: a shard of a table that is split or placed whole.
  int replicas = 0;
  [[nodiscard]] bool is_replica() const { return replicas > 0; }
};

/** Every device's shards, in plan order (devices without shards get an empty list). */
[[nodiscard]] std::vector<std::vector<PlacedShard>> shards_by_device(const Task& task, const Plan& plan);

/** Per device, the summed output columns of its shards (what it sends in the all-to-all; copies
 *  of data-parallel tables send nothing). */
[[nodiscard]] std::vector<std::int64_t> device_dim_sums(const std::vector<std::vector<PlacedShard>>& by_device);

/** Whether `shard` outputs partial sums (it holds a row range of a pooled table, not a
 *  data-parallel copy) rather than pooled vectors or a sequence table's looked-up rows
 *  (comm_model.h `OutputDims`). */
[[nodiscard]] bool outputs_partial_sums(const Task& task, const PlacedShard& shard);

/**
 * The columns `shard` puts into the output exchange (comm_model.h `OutputDims`): its columns for
 * a pooled table; for a sequence table its output values per sample (`TableSpec::output_width`:
 * columns × the lookups per sample its rows serve), rounded up to a whole number: at most one
 * value per sample more, never less (the lower bound charges the exact widths).
 */
[[nodiscard]] std::int64_t output_columns(const Task& task, const PlacedShard& shard);

/** What every device puts into the output exchange (comm_model.h `OutputDims`). */
[[nodiscard]] OutputDims device_output_dims(const Task& task, const std::vector<std::vector<PlacedShard>>& by_device);

struct DeviceCompute {
  double fw_ms = 0.0;
  double bw_ms = 0.0;
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  /** Canonical spec, e.g. "sim:preset=cpu" or "cpu:batch=8192,repeats=5". */
  [[nodiscard]] virtual std::string spec() const = 0;
  /** Measured (real kernels) or modelled. */
  [[nodiscard]] virtual CostSource source() const = 0;
  /** Human-readable detail for reports: batch, repeats, calibration. */
  [[nodiscard]] virtual std::string detail() const = 0;
  /** Forward and backward compute of one device holding `shards` (empty → 0). */
  [[nodiscard]] virtual DeviceCompute device_compute(const Task& task, std::span<const PlacedShard> shards,
                                                     const Context& ctx) = 0;

  /**
   * The incremental query of models whose device cost adds up over shards (sim): when true,
   * device_compute = c · device_overhead() + Σ shard_compute(shard) (up to rounding), with c the
   * number of fused calls the device makes — one if it holds any shard of a split or whole table,
   * plus one if it holds any copy of a data-parallel table — so search code can add and remove
   * shards in O(1) instead of asking per device.
   */
  [[nodiscard]] virtual bool is_additive() const { return false; }
  /** One shard's part of its device's cost; only for additive models (else InternalError). */
  [[nodiscard]] virtual DeviceCompute shard_compute(const Task& task, const PlacedShard& shard);
  /** What a device pays once per fused call (its launch); additive models only. */
  [[nodiscard]] virtual DeviceCompute device_overhead() const;
  /** Whether the model can cost copies of data-parallel tables (a trained model that never saw
   *  one cannot: `device_compute` then throws Error naming the table). */
  [[nodiscard]] virtual bool costs_replicas() const { return true; }
};

}  // namespace embshard
