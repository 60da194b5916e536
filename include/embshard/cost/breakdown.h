#pragma once
/**
 * @file breakdown.h
 * @brief What a plan costs: the per-device breakdown of one training step's embedding stage and
 *        the objectives that fold it into one number (design.md §4).
 *
 * A step runs on every device at once: the input all-to-all of indices, forward compute of the
 * local shard, the forward all-to-all of pooled vectors, the backward all-to-all of their
 * gradients, and the backward compute with the fused optimizer update. Per device d (ms):
 *
 *   in_comm_d   the part of d's input all-to-all (indices and lengths to the shards' owners,
 *               cost/link_model.h) the step waits for: all of it when exposed, what does not fit
 *               under d's fw + bw compute when the pipeline overlaps it, 0 when omitted
 *   in_hidden_d the part the pipeline hides (reported, not counted)
 *   fw_comp_d   forward kernel of d's shard
 *   fw_comm_d   d's part of the forward all-to-all: latency + its own send / receive volume over
 *               its links (not counting the wait for slower devices)
 *   fw_wait_d   the straggler wait: max_e fw_comp_e − fw_comp_d (the all-to-all cannot start
 *               before the slowest device has its pooled vectors)
 *   bw_comm_d   d's part of the backward all-to-all (gradients of the pooled vectors)
 *   bw_comp_d   backward kernel of d's shard with the fused optimizer update
 *   ar_comm_d   the all-reduce of the data-parallel tables' gradients (cost/link_model.h; the
 *               same on every device, 0 when the plan has no data-parallel table), plus in a 2D
 *               plan the rank's replica sync per step (plan/sharding_groups.h)
 *
 * Objectives (lower is better, except that `balance` is reported as-is, higher is better):
 *
 *   step      = max_d in_comm_d + max_d fw_comp_d + max_d fw_comm_d + max_d bw_comm_d
 *               + max_d bw_comp_d + max_d ar_comm_d
 *               (synchronous step: each collective lasts as long as its most loaded device)
 *   max_sum   = max_d (in_comm_d + fw_comp_d + fw_comm_d + bw_comm_d + bw_comp_d + ar_comm_d)
 *               (the figure NeuroShard and DreamShard report; no straggler wait)
 *   balance   = min_d (fw_comp_d + bw_comp_d) / max_d (fw_comp_d + bw_comp_d)   (AutoShard; 1 if all 0)
 *
 * `step` ≥ `max_sum` always.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/plan/sharding_groups.h"

namespace embshard {

struct DeviceCost {
  double in_comm_ms = 0.0;    ///< input all-to-all, the part the step pays
  double in_hidden_ms = 0.0;  ///< input all-to-all, the part an overlapping pipeline hides
  double fw_comp_ms = 0.0;
  double fw_comm_ms = 0.0;
  double fw_wait_ms = 0.0;
  double bw_comm_ms = 0.0;
  double bw_comp_ms = 0.0;
  double ar_comm_ms = 0.0;     ///< all-reduce of data-parallel gradients (+ a 2D plan's replica sync)
  std::int64_t hbm_bytes = 0;  ///< memory the device's shards use (weights only)
  std::int64_t uvm_bytes = 0;

  [[nodiscard]] double sum_ms() const {
    return in_comm_ms + fw_comp_ms + fw_comm_ms + bw_comm_ms + bw_comp_ms + ar_comm_ms;
  }
};

/** Where each part of a breakdown came from. */
enum class CostSource { kMeasured, kModelled };
[[nodiscard]] const char* to_string(CostSource source);

struct CostBreakdown {
  /// One entry per device; for a 2D plan one per rank of a sharding group (every group alike).
  std::vector<DeviceCost> devices;
  ShardingGroups groups;  ///< the plan's 2D layout, if any (plan/sharding_groups.h)
  CostSource compute_source = CostSource::kModelled;
  CostSource comm_source = CostSource::kModelled;
  std::string compute_detail;  ///< e.g. "cpu kernels, batch 8192, median of 5" or "sim:preset=v100"
  std::string comm_detail;     ///< e.g. "link model of v100:..." or "MPI, 4 ranks"
};

enum class Objective { kStep, kMaxSum, kBalance };

/** "step", "max_sum", "balance". */
[[nodiscard]] const char* to_string(Objective objective);
/** Parses an objective name; throws Error listing the names otherwise. */
[[nodiscard]] Objective parse_objective(const std::string& name);

/** The objective's value (definitions in the file comment); 0 for a breakdown with no devices. */
[[nodiscard]] double objective_value(const CostBreakdown& breakdown, Objective objective);

/** How far `value` lies above a lower `bound`, as a share of the bound: (value − bound) / bound;
 *  0 when the bound is not positive. The one gap formula of reports, `compare` and solvers. */
[[nodiscard]] inline double gap_to_bound(double value, double bound) {
  return bound > 0.0 ? (value - bound) / bound : 0.0;
}

/** Fills every device's fw_wait_ms from the fw_comp_ms values. */
void fill_straggler_wait(CostBreakdown& breakdown);

}  // namespace embshard
