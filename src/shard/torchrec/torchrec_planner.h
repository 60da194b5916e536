#pragma once
/**
 * @file torchrec_planner.h (private to src/shard/torchrec)
 * @brief TorchRec's embedding sharding planner re-implemented in C++: enumerator, perf and
 *        storage estimators, storage reservation, partitioners, proposers, best-plan choice.
 *
 * Follows the TorchRec snapshot studied in the digest /work/shared/docs/references/torchrec-planner.md:
 * pytorch/torchrec commit a48cef79 (2025-10-04, version.txt 1.4.0a0), module
 * torchrec/distributed/planner. "§x.y" below cites that digest.
 *
 * Formula sets (`formulas=`, `TorchrecFormulas`): by default the released torchrec 1.9.2, which
 * differs from 1.4.0a0 in one formula the digest's §8 found by running it — pooled outputs per
 * rank are min(1, pooling_factor) × B instead of B (`ShardPerfContext.batch_outputs`, and the
 * I/O buffers of the storage estimate); `formulas=1.4.0a0` keeps the snapshot's B. Everything else
 * below is common to both.
 *
 * Mapping of an embshard Task onto TorchRec's inputs (documented choices, not TorchRec facts):
 *   world_size W        = topology devices;  local_world_size L = devices_per_host (≤ W)
 *   compute_device      = "cuda" for every task (the types are governed by the task's Constraints)
 *   hbm_cap (per rank)  = the device's hbm_bytes, then TorchRec's storage reservation (§1.7)
 *   ddr_cap (per rank)  = the device's uvm_bytes (used only by the UVM kernels)
 *   batch B (per rank)  = task global batch / W (TorchRec's batch_size is per rank, §1.1)
 *   pooling factor pf   = TableStats::pooling_factor; one feature per table, num_poolings 1
 *   element bytes e_t   = the table dtype's bytes; comm element bytes e_a2a = e_rs = e_t
 *   optimizer state     = the table's `optimizer` (table.h: tensor × m, §1.6; none by default,
 *                         as a bare TorchRec model has no optimizer attached)
 *   bandwidths          = `BandwidthSource::kTask`: hbm_mem_bw = device 0's hbm_gbps,
 *                         hbm_to_ddr_mem_bw = device 0's uvm_gbps, intra_host_bw / inter_host_bw
 *                         = the slowest device's link figures (GB/s = 10^6 bytes/ms; TorchRec assumes
 *                         homogeneous bandwidth); `kTorchrec`: the constants of §1.1 (GiB/s).
 * data_parallel (first in TorchRec's order, kernel "dense" only, partitioned uniformly: copy i on
 * rank i) follows §1.5's DP perf and §1.6's DP storage. Not implemented: table_column_wise /
 * grid_shard (TWCW/grid are not default-enumerated shapes of ours), key-value / virtual-table kernels,
 * cache statistics (so prefetch_compute is 0), weighted features, quantised comms, dense-parameter
 * reservation (a Task has no dense parameters: that term is 0), HeteroEmbeddingShardingPlanner.
 */
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/data/task.h"
#include "embshard/plan/plan.h"
#include "embshard/shard/torchrec_reservation.h"

namespace embshard::detail::torchrec {

// ---- constants (§1.1, §1.5; GiB/s converted to bytes per ms) --------------------------------------

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kHbmMemBwBytesPerMs = 897.0 * kGiB / 1000.0;      ///< HBM_MEM_BW
inline constexpr double kHbmToDdrMemBwBytesPerMs = 32.0 * kGiB / 1000.0;  ///< HBM_TO_DDR_MEM_BW
inline constexpr double kIntraHostBwBytesPerMs = 600.0 * kGiB / 1000.0;   ///< INTRA_NODE_BANDWIDTH
inline constexpr double kInterHostBwBytesPerMs = 12.5 * kGiB / 1000.0;    ///< CROSS_NODE_BANDWIDTH
inline constexpr double kBigintBytes = 8.0;                               ///< BIGINT_DTYPE: index bytes
inline constexpr double kBwdComputeMultiplier = 2.0;                      ///< BWD_COMPUTE_MULTIPLIER
inline constexpr double kBatchedCopyPerfFactor = 2.455;                   ///< BATCHED_COPY_PERF_FACTOR (RW/TWRW bwd)
inline constexpr double kDenseOptimizerTraffic = 9.22;    ///< DP optimizer: table bytes × this / bw_dev (§1.5)
inline constexpr int kFullBlockEmbDim = 128;              ///< FULL_BLOCK_EMB_DIM
inline constexpr double kHalfBlockPenalty = 1.15;         ///< dims 64..127
inline constexpr double kQuarterBlockPenalty = 1.75;      ///< dims below 64
inline constexpr int kMinCwDim = 128;                     ///< MIN_CW_DIM (min_partition default)
inline constexpr double kUvmCachingRatio = 0.2;           ///< UVM_CACHING_RATIO (clf default)
inline constexpr double kUvmKernelBwDivisor = 10.0;       ///< kernel_bw_lookup: UVM bw / 10
inline constexpr double kDenseKernelBwShare = 0.5;        ///< kernel_bw_lookup: dense at half HBM bw (1.9.2, measured)
inline constexpr std::int64_t kMaxGridProposals = 10000;  ///< GridSearchProposer (§1.9)
inline constexpr std::int64_t kMemoryBalancedStepBytes = 10LL * 1024 * 1024;  ///< 10 MiB (§1.8)

// ---- configuration --------------------------------------------------------------------------------

enum class BandwidthSource { kTask, kTorchrec };
enum class PartitionerKind { kGreedy, kMemoryBalanced };
enum class ProposerSet { kDefault, kGreedy };
enum class ComputeKernel { kFused, kFusedUvm, kFusedUvmCaching, kDense };
[[nodiscard]] const char* to_string(ComputeKernel kernel);

/** TorchRec's Topology (§1.1) as derived from a task (file comment), bandwidths in bytes/ms. */
/** Which TorchRec release's formulas (file comment). */
enum class TorchrecFormulas { k1_9_2, k1_4_0a0 };

struct TorchrecTopology {
  TorchrecFormulas formulas = TorchrecFormulas::k1_9_2;
  int world_size = 1;
  int local_world_size = 1;
  double batch_size_per_rank = 512.0;
  double hbm_mem_bw_bytes_per_ms = kHbmMemBwBytesPerMs;
  double hbm_to_ddr_mem_bw_bytes_per_ms = kHbmToDdrMemBwBytesPerMs;
  double intra_host_bw_bytes_per_ms = kIntraHostBwBytesPerMs;
  double inter_host_bw_bytes_per_ms = kInterHostBwBytesPerMs;
  std::vector<std::int64_t> hbm_cap_bytes;  ///< per rank, after the storage reservation
  std::vector<std::int64_t> ddr_cap_bytes;  ///< per rank
};

struct PlannerOptions {
  TorchrecFormulas formulas = TorchrecFormulas::k1_9_2;
  BandwidthSource bandwidths = BandwidthSource::kTask;
  PartitionerKind partitioner = PartitionerKind::kGreedy;
  ProposerSet proposers = ProposerSet::kDefault;
  double storage_reservation = kTorchrecReservationShare;  ///< HBM fraction held back (§1.7)
  bool reserve_kjt = true;        ///< also hold back the KJT estimate (Heuristical vs FixedPercentage)
  int min_partition = kMinCwDim;  ///< column-wise block lower bound (§1.4)
  int greedy_threshold = 0;       ///< GreedyProposer early stop after N non-improving; 0 = never
  double time_ms = 0.0;           ///< stop proposing after this long (TorchRec's timeout_seconds); 0 = never
};

// ---- search space (§1.3–§1.6) ---------------------------------------------------------------------

/** Perf of one shard in ms (§1.5); `total` is the plain sum of the five parts. */
struct Perf {
  double fwd_compute_ms = 0.0;
  double fwd_comms_ms = 0.0;
  double bwd_compute_ms = 0.0;
  double bwd_comms_ms = 0.0;
  double prefetch_compute_ms = 0.0;
  [[nodiscard]] double total_ms() const {
    return fwd_compute_ms + fwd_comms_ms + bwd_compute_ms + bwd_comms_ms + prefetch_compute_ms;
  }
};

/** Storage of one shard (§1.6). */
struct Storage {
  std::int64_t hbm_bytes = 0;
  std::int64_t ddr_bytes = 0;
};

struct OptionShard {
  std::int64_t row_offset = 0;
  std::int64_t num_rows = 0;  ///< may be 0 (RW/TWRW tails, §1.4); such shards leave the Plan
  int col_offset = 0;
  int num_cols = 0;
  Perf perf;
  Storage storage;
};

/** One (table, sharding type, compute kernel) choice with its shards (TorchRec's ShardingOption). */
struct ShardingOption {
  std::size_t table = 0;  ///< index in task.workload.tables
  ShardingType type = ShardingType::kTableWise;
  ComputeKernel kernel = ComputeKernel::kFused;
  std::vector<OptionShard> shards;

  /// partition_by uniform: shard i on rank i (RW, DP)
  [[nodiscard]] bool is_uniform() const {
    return type == ShardingType::kRowWise || type == ShardingType::kDataParallel;
  }
  [[nodiscard]] bool is_host() const { return type == ShardingType::kTableRowWise; }  ///< partition_by host
  [[nodiscard]] double perf_sum_ms() const;
  [[nodiscard]] double perf_max_ms() const;
  [[nodiscard]] std::int64_t hbm_sum_bytes() const;
  [[nodiscard]] std::int64_t ddr_sum_bytes() const;
};

/** TorchRec's topology for `task` (mapping in the file comment), with the §1.7 reservation. */
[[nodiscard]] TorchrecTopology make_torchrec_topology(const Task& task, const PlannerOptions& options);

/** KJT reservation per rank: ceil(Σ_f pf_f·B·8) × 20 bytes (§1.7). */
[[nodiscard]] std::int64_t kjt_reservation_bytes(const Task& task, double batch_size_per_rank);

/** CW block width (§1.4): smallest b with min_partition ≤ b < cols, cols % b == 0, b % 4 == 0; else cols. */
[[nodiscard]] int column_block_width(int cols, int min_partition);

/** Sharding types the task's Constraints allow, in TorchRec's order (DP, TW, CW, RW, TWRW). */
[[nodiscard]] std::vector<ShardingType> allowed_sharding_types(const Constraints& constraints);

/** Kernels of `type`: DP dense only; else fused, plus fused_uvm and fused_uvm_caching when the
 *  task allows UVM (§1.3). */
[[nodiscard]] std::vector<ComputeKernel> allowed_kernels(const Constraints& constraints, ShardingType type);

/** Shard shapes of `type` for a rows × cols table (§1.4); perf and storage left zero. */
[[nodiscard]] std::vector<OptionShard> shard_shapes(ShardingType type, std::int64_t rows, int cols,
                                                    const TorchrecTopology& topo, int min_partition);

/** The kernel's bandwidth bw_dev in bytes/ms (§1.5 kernel_bw_lookup, cuda rows). */
[[nodiscard]] double kernel_bw_bytes_per_ms(ComputeKernel kernel, const TorchrecTopology& topo);

/** One shard's perf (§1.5) for a table of `table` with `num_cols` columns under `type`/`kernel`. */
[[nodiscard]] Perf shard_perf(const TableSpec& table, ShardingType type, ComputeKernel kernel, int num_cols,
                              const TorchrecTopology& topo);

/** One shard's storage (§1.6, training, pipeline NONE, no optimizer state). */
[[nodiscard]] Storage shard_storage(const TableSpec& table, ShardingType type, ComputeKernel kernel,
                                    const OptionShard& shard, const TorchrecTopology& topo);

/**
 * Every option of every table (EmbeddingEnumerator, §1.3), estimators applied; the tables
 * enumerated before `stop()` said so (all, unless it did).
 */
[[nodiscard]] std::vector<std::vector<ShardingOption>> enumerate_options(
    const Task& task, const TorchrecTopology& topo, const PlannerOptions& options,
    const std::function<bool()>& stop = [] { return false; });

// ---- partitioning (§1.8) and rating (§1.10) --------------------------------------------------------

/** A proposal: one option per table; ranks[k][s] = rank of shard s of table k's option. */
struct Partition {
  std::vector<std::vector<int>> ranks;
  std::vector<double> perf_by_rank_ms;
  std::vector<std::int64_t> hbm_by_rank_bytes;
};

struct PartitionOutcome {
  bool ok = false;
  Partition partition;
  std::string failure;  ///< names the table that did not fit (PlannerError(PARTITION))
};

/** GreedyPerfPartitioner (§1.8); `by_perf` = sort_by PERF instead of STORAGE. */
[[nodiscard]] PartitionOutcome greedy_partition(const std::vector<const ShardingOption*>& proposal, const Task& task,
                                                const TorchrecTopology& topo, bool by_perf);

/** MemoryBalancedPartitioner (§1.8): max_search_count 10, tolerance 0.02. */
[[nodiscard]] PartitionOutcome memory_balanced_partition(const std::vector<const ShardingOption*>& proposal,
                                                         const Task& task, const TorchrecTopology& topo);

/** NoopPerfModel rating (§1.10): max over ranks of the summed shard perf totals, ms. */
[[nodiscard]] double rate_partition(const Partition& partition);

/** The chosen options as an embshard Plan (empty shards dropped; UVM rows per kernel). */
[[nodiscard]] Plan to_plan(const Task& task, const std::vector<const ShardingOption*>& proposal,
                           const Partition& partition);

}  // namespace embshard::detail::torchrec
