#pragma once
/**
 * @file torchrec_export.h
 * @brief Exports a `Plan` as the JSON a TorchRec `ShardingPlan` is built from.
 *
 * Format (mirrors TorchRec's `ShardingPlan._serialize()`, plus the world it was planned for;
 * `embshard.torchrec.sharding_plan_from_dict` (python/embshard/torchrec.py) turns it into a
 * `torchrec.distributed.types.ShardingPlan`):
 *
 *   {"world_size": W, "local_world_size": L, "compute_device": "cuda",
 *    "plan": {"<module_path>": {"<table>": {
 *        "sharding_type": "row_wise", "compute_kernel": "fused", "ranks": [0, 1],
 *        "shards": [
 *          {"shard_offsets": [0, 0], "shard_sizes": [500, 64], "placement": "rank:0/cuda:0"},
 *          {"shard_offsets": [500, 0], "shard_sizes": [500, 64], "placement": "rank:1/cuda:1"}],
 *        "cache_params": {"algorithm": "LRU", "load_factor": 0.25}}}}}   // only with a UVM tier
 *
 * W is the topology's device count, L its `devices_per_host`; rank r is embshard device r and its
 * placement is "rank:r/cuda:(r % L)" (cuda) or "rank:r/cpu" (cpu). A 2D plan (plan/sharding_groups.h)
 * is exported as what TorchRec's `DMPCollection` takes: the plan of one sharding group over its
 * ranks 0..G−1 (checked against the group's task: row-wise over the G ranks, table-row-wise over a
 * group's host), and after "compute_device" the arguments
 *   "sharding_group_size": G, "node_group_size": the group's devices per host,
 *   "use_inter_host_allreduce": false for strided ranks, true for contiguous ones
 * (DMPCollection remaps the ranks to each group's). Offsets and sizes are
 * [row, column]. Tables appear in plan order, each shard on its own line (readers such as
 * `python/embshard/torchrec.py` do not depend on the layout).
 *
 * Sharding types map one to one: table_wise, column_wise, row_wise, table_row_wise,
 * data_parallel. Column-wise shards are listed by column and `ranks` pairs 1:1 with them (a rank
 * may repeat). A data_parallel table lists every rank, no shards (TorchRec's DP sharding has no
 * shard spec) and the kernel "dense", the only one TorchRec runs it with.
 *
 * Compute kernel (one per table in TorchRec): "fused" when every shard is wholly in HBM; else
 * "fused_uvm_caching" with an LRU cache whose `load_factor` is the table's share of rows in HBM
 * (Σ hbm_rows / Σ rows; TorchRec applies one factor to every shard of the table, so an uneven
 * HBM split among shards is evened out); "fused_uvm" (no cache) when no row is in HBM.
 *
 * Plans TorchRec's training path cannot run are rejected with an `Error` naming the table:
 *   - the plan must pass `find_error_in_plan`;
 *   - table_wise: one shard covering the table (guaranteed by the validation);
 *   - row_wise: shard k lives on rank k and holds rows [k·b, min((k+1)·b, R)), b = ceil(R / W),
 *     for every rank whose block is non-empty (the input dist buckets ids by b whatever the
 *     metadata says); ranks whose block is empty get a zero-row shard in the export;
 *   - table_row_wise: the same with b = ceil(R / L) on the ranks h·L … h·L+L−1 of one host h;
 *   - column_wise: widths multiples of 4 (guaranteed by the validation);
 *   - compute_device cpu: no row_wise / table_row_wise (Gloo lacks reduce-scatter) and no UVM.
 */
#include <string>

#include "embshard/data/task.h"
#include "embshard/plan/plan.h"

namespace embshard {

/** The device kind TorchRec runs the plan on. */
enum class TorchrecDevice { kCuda, kCpu };
[[nodiscard]] const char* to_string(TorchrecDevice device);

struct TorchrecExportOptions {
  /** FQN of the EmbeddingBagCollection in the model handed to DMP ("" when it is the root); the
   *  default is where torchrec.models.dlrm.DLRM keeps it (`plan --torchrec-module`). */
  std::string module_path = "sparse_arch.embedding_bag_collection";
  TorchrecDevice compute_device = TorchrecDevice::kCuda;
};

/** "" when every table of `task` can live in the one module a plan file names (all pooled, or all
 *  sequence tables); else why not (TorchRec keeps the two kinds in two modules). */
[[nodiscard]] std::string find_error_in_one_module_export(const Task& task);

/** The TorchRec plan JSON of `plan` on `task` (ends with a newline); throws Error (see above). */
[[nodiscard]] std::string torchrec_plan_json(const Task& task, const Plan& plan, const TorchrecExportOptions& options);

/** Writes `torchrec_plan_json(task, plan, options)` to `path` atomically. */
void write_torchrec_plan_file(const std::string& path, const Task& task, const Plan& plan,
                              const TorchrecExportOptions& options);

}  // namespace embshard
