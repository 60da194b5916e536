#pragma once
// The measured compute backends (`cpu`, `reference`, `cuda`): each device's shards fused into one
// kernel call and timed with ShardTimer. Private to src/eval; evaluator.h documents the behaviour.
//
// Memory tiers: a shard with 0 ≤ hbm_rows < its rows gets RecShard's remap (data/remap.h), built
// from the access counts of the table's generative model so that the first hbm_rows rows of the
// shard are its hottest: by default the counts of the measured draw itself (in-sample, like the
// one-batch ICDF of the task's statistics that the sharders and `tier_lookups` rank rows by), with
// remap=held_out those of `kRemapProfileBatches` other draws at the task's batch
// (held out: rows a fresh batch needs but the profile never saw rank last, so fewer lookups hit
// the HBM part than the ICDF predicts). The remap permutes only the shard's own rows [row_begin, row_end)
// (build_remap's row range: other rows keep their numbers), so the lookups that fall in the shard are those of the
// plan. ShardTimer then sees the plan's tiers: lookups of re-based row < hbm_rows are the HBM tier's. `cuda` places the
// other rows in host-mapped memory (kernels/cuda_embedding_bag.h); `cpu` and `reference` have no UVM tier on this
// machine, so there the remap only re-orders rows.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "embshard/core/registry.h"
#include "embshard/cost/compute_model.h"
#include "embshard/cost/cost_model.h"
#include "embshard/data/pool.h"
#include "embshard/data/task_lookups.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/measure.h"
#include "embshard/profile/shard_timer.h"

namespace embshard::detail {

/** What a `measured` judge's spec says (eval/cost_model_registry.h): the model owns its options. */
struct MeasuredOptions {
  std::string impl = "cpu";     ///< the kernels: reference | cpu | cuda
  std::int64_t batch = 0;       ///< the batch to run; 0: the task's
  MeasureOptions measure;       ///< warm-up, repeats, cache flush, trim
  std::uint64_t draw = 0;       ///< which draw of each table's lookups
  bool remap_held_out = false;  ///< rank a tiered shard's rows by other draws (header comment)
};

/** The options of a `measured` spec's bound parameters (bad measuring options fail, named). */
[[nodiscard]] MeasuredOptions measured_options(const Params& params);

/** The options of any judge spec: a `measured` spec's own, `measured`'s defaults for any other. */
[[nodiscard]] MeasuredOptions measured_options_of(const std::string& judge_spec);

/** The batch a measured judge runs: `batch` when positive, else the task's (the one place of this rule). */
[[nodiscard]] std::int64_t measured_batch_size(const Task& task, std::int64_t batch);

/** Profile draws behind a tiered shard's remap (header comment). */
inline constexpr int kRemapProfileBatches = 4;

/** The lookup models of a task's tables and the access counts behind remaps (cached). */
class MeasuredShards {
 public:
  explicit MeasuredShards(const Task& task);

  /**
   * ShardTimer's specs of one device's shards (in order): model, columns, dtype, row range,
   * `hbm_rows` (−1 = all) and, for a tiered shard, its remap (header comment).
   */
  [[nodiscard]] std::vector<ShardTableSpec> specs(const Task& task, std::span<const PlacedShard> shards,
                                                  std::int64_t batch_size, std::uint64_t batch_number, bool held_out);

 private:
  const std::vector<std::int64_t>& access_counts(const Task& task, std::size_t t, std::int64_t batch_size,
                                                 std::uint64_t batch_number, bool held_out);

  std::vector<PoolTable> models_;  ///< task_lookup_models (data/task_lookups.h)
  std::map<std::tuple<std::size_t, std::int64_t, std::uint64_t, bool>, std::vector<std::int64_t>> counts_;
};

/**
 * A device's two fused calls (cost/compute_model.h): the shards of split or whole tables at the
 * whole batch, and its copies of data-parallel tables at their share of it (at least one bag).
 */
struct DeviceCalls {
  std::vector<PlacedShard> shards;
  std::vector<PlacedShard> copies;
  std::int64_t copy_batch = 0;
};
[[nodiscard]] DeviceCalls device_calls(std::span<const PlacedShard> shards, std::int64_t batch_size);

/** Registers `measured` (eval/cost_model_registry.h): the kernels timed here plus the link model. */
void register_measured_cost_model(CostModelRegistry& registry);

}  // namespace embshard::detail
