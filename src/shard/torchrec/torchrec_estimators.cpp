// TorchRec planner, part 1: topology mapping and storage reservation (§1.1, §1.7), enumerator and
// shard sizing (§1.3, §1.4), perf estimator (§1.5) and storage estimator (§1.6).
// Formulas follow TorchRec commit a48cef79 (1.4.0a0), digest /work/shared/docs/references/torchrec-planner.md.
#include <algorithm>
#include <cmath>

#include "embshard/core/error.h"
#include "embshard/shard/torchrec_reservation.h"
#include "shard/torchrec/torchrec_planner.h"

namespace embshard::detail::torchrec {
namespace {

/** GB/s (10^9 bytes/s) → bytes per ms. */
double gbps_to_bytes_per_ms(double gbps) { return gbps * 1e6; }

/**
 * ⌈bytes⌉ as an integer, checked (defence in depth: task limits keep every estimate far below
 * 2^62, but a NaN or an overflowing double must be an Error, never an undefined cast).
 */
std::int64_t ceil_bytes(double bytes) {
  constexpr double kLimit = 0x1p62;  // leaves room for the sums and × 20 copies below
  const double up = std::ceil(bytes);
  EMBSHARD_CHECK(up >= 0 && up <= kLimit, "torchrec: a storage or input-size estimate of ", bytes,
                 " bytes is out of range (limit 2^62); the task's tables are too large");
  return static_cast<std::int64_t>(up);
}

/**
 * BasicCommsBandwidths.get_bw for every collective but ALL_REDUCE (§1.1): intra-host bandwidth
 * when the collective's world fits in one host (world ≤ local), else inter-host.
 */
double comms_bw_bytes_per_ms(double world, double local, const TorchrecTopology& topo) {
  return world <= local ? topo.intra_host_bw_bytes_per_ms : topo.inter_host_bw_bytes_per_ms;
}

/** Block-usage penalty of a TW/CW shard of width D (§1.5): 1 (≥128), 1.15 (64..127), 1.75 (<64). */
double block_usage_penalty(int num_cols) {
  if (num_cols >= kFullBlockEmbDim) return 1.0;
  return num_cols >= 64 ? kHalfBlockPenalty : kQuarterBlockPenalty;
}

/** The per-table quantities of §1.5: I = pf·B (batch inputs), O = B (pooled outputs; 1.9.2:
 *  min(1, pf)·B, torchrec_planner.h), O = I for a sequence table (EmbeddingCollection). */
struct BatchShape {
  double inputs = 0.0;   ///< I, ids per rank
  double outputs = 0.0;  ///< O, pooled rows per rank
  bool pooled = true;    ///< false: a sequence table, whose shards output their own inputs (O = I')
  /** O of a shard that serves `shard_inputs` ids per rank (I / W row-wise, I / L table-row-wise). */
  [[nodiscard]] double outputs_of(double shard_inputs) const { return pooled ? outputs : shard_inputs; }
};

BatchShape batch_shape(const TableSpec& table, const TorchrecTopology& topo) {
  const double inputs = table.stats.pooling_factor * topo.batch_size_per_rank;
  if (!table.pooled) return {inputs, inputs, false};  // a sequence table: O = I (an output row per id)
  const double pooled = topo.formulas == TorchrecFormulas::k1_9_2
                            ? std::min(1.0, table.stats.pooling_factor) * topo.batch_size_per_rank
                            : topo.batch_size_per_rank;
  return {inputs, pooled, true};
}

/** TW / CW shard (§1.5): the shard serves the whole global batch (× W). */
Perf table_wise_perf(const BatchShape& b, int num_cols, double elem_bytes, double bw_dev,
                     const TorchrecTopology& topo) {
  const double w = topo.world_size;
  const double input_bytes = std::ceil(b.inputs * w * kBigintBytes);
  const double lookup_bytes = b.inputs * w * std::max(num_cols, 32) * elem_bytes;
  const double output_bytes = b.outputs * w * num_cols * elem_bytes;
  const double a2a_bw = comms_bw_bytes_per_ms(w, topo.local_world_size, topo);
  Perf p;
  p.fwd_compute_ms = (input_bytes + lookup_bytes + output_bytes) * block_usage_penalty(num_cols) / bw_dev;
  p.fwd_comms_ms = output_bytes / a2a_bw;
  p.bwd_compute_ms = kBwdComputeMultiplier * p.fwd_compute_ms;
  p.bwd_comms_ms = output_bytes / a2a_bw;
  return p;
}

/** RW shard (§1.5): I' = I/W, reduce-scatter forward, all-gather + batched copy backward. */
Perf row_wise_perf(const BatchShape& b, int num_cols, double elem_bytes, double bw_dev, const TorchrecTopology& topo) {
  const double w = topo.world_size;
  const double shard_inputs = b.inputs / w;
  const double input_bytes = std::ceil(shard_inputs * w * kBigintBytes);
  const double lookup_bytes = shard_inputs * w * num_cols * elem_bytes;
  const double output_bytes = b.outputs_of(shard_inputs) * w * num_cols * elem_bytes;
  const double rs_bw = comms_bw_bytes_per_ms(w, topo.local_world_size, topo);
  Perf p;
  p.fwd_compute_ms = (input_bytes + lookup_bytes + output_bytes) / bw_dev;
  p.fwd_comms_ms = output_bytes / rs_bw;
  p.bwd_compute_ms = kBwdComputeMultiplier * p.fwd_compute_ms;
  p.bwd_comms_ms = output_bytes / rs_bw + output_bytes * kBatchedCopyPerfFactor / bw_dev;
  return p;
}

/** TWRW shard (§1.5, torchrec#2782): I' = I/L, intra reduce-scatter plus inter all-to-all if W > L. */
Perf table_row_wise_perf(const BatchShape& b, int num_cols, double elem_bytes, double bw_dev,
                         const TorchrecTopology& topo) {
  const double w = topo.world_size;
  const double l = topo.local_world_size;
  const double shard_inputs = b.inputs / l;
  const double input_bytes = std::ceil(shard_inputs * w * kBigintBytes);
  const double lookup_bytes = shard_inputs * w * num_cols * elem_bytes;
  const double outputs = b.outputs_of(shard_inputs);
  const double output_bytes = outputs * w * num_cols * elem_bytes;
  const double intra_ms = output_bytes / comms_bw_bytes_per_ms(l, l, topo);
  const double inter_ms =
      w > l ? outputs * (w / l) * num_cols * elem_bytes / comms_bw_bytes_per_ms(w / l, 1, topo) : 0.0;
  Perf p;
  p.fwd_compute_ms = (input_bytes + lookup_bytes + output_bytes) / bw_dev;
  p.fwd_comms_ms = intra_ms + inter_ms;
  p.bwd_compute_ms = kBwdComputeMultiplier * p.fwd_compute_ms;
  p.bwd_comms_ms = intra_ms + inter_ms + output_bytes * kBatchedCopyPerfFactor / bw_dev;
  return p;
}

/**
 * A DP copy (§1.5): its own rank's I and O; no forward comms; backward comms the gradient's
 * all-reduce, table·(2n−1)/n over inter_bw·L with n = min(W/L, 2), doubled if W > 2L, plus the
 * dense optimizer's table·9.22 / bw_dev.
 */
Perf data_parallel_perf(const BatchShape& b, std::int64_t rows, int num_cols, double elem_bytes, double bw_dev,
                        const TorchrecTopology& topo) {
  const double w = topo.world_size;
  const double l = topo.local_world_size;
  const double table_bytes = static_cast<double>(rows) * num_cols * elem_bytes;
  const double n = std::min(w / l, 2.0);
  double all_reduce_ms = table_bytes * (2.0 * n - 1.0) / n / (topo.inter_host_bw_bytes_per_ms * l);
  if (w > 2.0 * l) all_reduce_ms *= 2.0;
  Perf p;
  p.fwd_compute_ms =
      (std::ceil(b.inputs * kBigintBytes) + b.inputs * num_cols * elem_bytes + b.outputs * num_cols * elem_bytes) /
      bw_dev;
  p.bwd_compute_ms = kBwdComputeMultiplier * p.fwd_compute_ms;
  p.bwd_comms_ms = all_reduce_ms + table_bytes * kDenseOptimizerTraffic / bw_dev;
  return p;
}

/** Rows per block and shards of a row split over `ways` ranks (§1.4: ceil blocks, 0-row tails). */
std::vector<OptionShard> row_blocks(std::int64_t rows, int cols, int ways) {
  const std::int64_t block = (rows + ways - 1) / ways;
  std::vector<OptionShard> shards;
  for (int i = 0; i < ways; ++i) {
    const std::int64_t begin = std::min(rows, block * i);
    shards.push_back({begin, std::min(rows, begin + block) - begin, 0, cols, {}, {}});
  }
  return shards;
}

/** IO buffers of a shard in HBM (§1.6, training, pipeline NONE): input + output bytes. */
std::int64_t io_buffer_bytes(const TableSpec& table, ShardingType type, const OptionShard& shard,
                             const TorchrecTopology& topo) {
  const BatchShape b = batch_shape(table, topo);
  const double w = topo.world_size;
  const double e = bytes_per_element(table.dtype);
  const auto output = [&](double shard_inputs) {
    return ceil_bytes(b.outputs_of(shard_inputs) * w * shard.num_cols * e);
  };
  switch (type) {
    case ShardingType::kTableWise:
    case ShardingType::kColumnWise: return ceil_bytes(b.inputs * w * kBigintBytes) + output(b.inputs);
    case ShardingType::kRowWise:
      return shard.num_rows == 0 ? 0 : ceil_bytes(b.inputs * kBigintBytes) + output(b.inputs / w);
    case ShardingType::kTableRowWise:
      return ceil_bytes(b.inputs / topo.local_world_size * w * kBigintBytes) + output(b.inputs / topo.local_world_size);
    case ShardingType::kDataParallel:  // its own rank's samples only
      return ceil_bytes(b.inputs * kBigintBytes) + ceil_bytes(b.outputs * shard.num_cols * e);
    case ShardingType::kGridShard: break;  // not enumerated (allowed_sharding_types)
  }
  return 0;
}

}  // namespace

const char* to_string(ComputeKernel kernel) {
  switch (kernel) {
    case ComputeKernel::kFused: return "fused";
    case ComputeKernel::kFusedUvm: return "fused_uvm";
    case ComputeKernel::kFusedUvmCaching: return "fused_uvm_caching";
    case ComputeKernel::kDense: return "dense";
  }
  return "?";
}

double ShardingOption::perf_sum_ms() const {
  double sum = 0.0;
  for (const auto& s : shards) sum += s.perf.total_ms();
  return sum;
}

double ShardingOption::perf_max_ms() const {
  double best = 0.0;
  for (const auto& s : shards) best = std::max(best, s.perf.total_ms());
  return best;
}

std::int64_t ShardingOption::hbm_sum_bytes() const {
  std::int64_t sum = 0;
  for (const auto& s : shards) sum += s.storage.hbm_bytes;
  return sum;
}

std::int64_t ShardingOption::ddr_sum_bytes() const {
  std::int64_t sum = 0;
  for (const auto& s : shards) sum += s.storage.ddr_bytes;
  return sum;
}

std::int64_t kjt_reservation_bytes(const Task& task, double batch_size_per_rank) {
  double ids = 0.0;
  for (const auto& t : task.workload.tables) ids += t.stats.pooling_factor * batch_size_per_rank;
  return torchrec_kjt_reservation_bytes(ids);
}

TorchrecTopology make_torchrec_topology(const Task& task, const PlannerOptions& options) {
  const Topology& t = task.topology;
  TorchrecTopology topo;
  topo.formulas = options.formulas;
  topo.world_size = t.num_devices();
  topo.local_world_size = std::clamp(t.devices_per_host, 1, topo.world_size);
  topo.batch_size_per_rank = static_cast<double>(task.workload.batch_size) / topo.world_size;
  if (options.bandwidths == BandwidthSource::kTask) {
    topo.hbm_mem_bw_bytes_per_ms = gbps_to_bytes_per_ms(t.devices.front().hbm_gbps);
    topo.hbm_to_ddr_mem_bw_bytes_per_ms = gbps_to_bytes_per_ms(t.devices.front().uvm_gbps);
    topo.intra_host_bw_bytes_per_ms = gbps_to_bytes_per_ms(t.slowest_intra_gbps());
    topo.inter_host_bw_bytes_per_ms = gbps_to_bytes_per_ms(t.slowest_inter_gbps());
  }
  const std::int64_t kjt_bytes = options.reserve_kjt ? kjt_reservation_bytes(task, topo.batch_size_per_rank) : 0;
  for (const Device& d : t.devices) {
    topo.hbm_cap_bytes.push_back(torchrec_table_budget_bytes(d.hbm_bytes, options.storage_reservation, 0, kjt_bytes));
    topo.ddr_cap_bytes.push_back(d.uvm_bytes);
  }
  return topo;
}

int column_block_width(int cols, int min_partition) {
  for (int b = std::max(min_partition, 1); b < cols; ++b) {
    if (cols % b == 0 && b % 4 == 0) return b;
  }
  return cols;
}

std::vector<ShardingType> allowed_sharding_types(const Constraints& constraints) {
  std::vector<ShardingType> types{ShardingType::kDataParallel, ShardingType::kTableWise};
  if (constraints.allow_column_split) types.push_back(ShardingType::kColumnWise);
  if (constraints.allow_row_split) {
    types.push_back(ShardingType::kRowWise);
    types.push_back(ShardingType::kTableRowWise);
  }
  return types;
}

std::vector<ComputeKernel> allowed_kernels(const Constraints& constraints, ShardingType type) {
  if (type == ShardingType::kDataParallel) return {ComputeKernel::kDense};
  if (!constraints.allow_uvm) return {ComputeKernel::kFused};
  return {ComputeKernel::kFused, ComputeKernel::kFusedUvm, ComputeKernel::kFusedUvmCaching};
}

std::vector<OptionShard> shard_shapes(ShardingType type, std::int64_t rows, int cols, const TorchrecTopology& topo,
                                      int min_partition) {
  switch (type) {
    case ShardingType::kTableWise: return {{0, rows, 0, cols, {}, {}}};
    case ShardingType::kColumnWise: {
      const int block = column_block_width(cols, min_partition);
      std::vector<OptionShard> shards;
      for (int c = 0; c < cols; c += block) shards.push_back({0, rows, c, block, {}, {}});
      return shards;
    }
    case ShardingType::kRowWise: return row_blocks(rows, cols, topo.world_size);
    case ShardingType::kTableRowWise: return row_blocks(rows, cols, topo.local_world_size);
    case ShardingType::kDataParallel:
      return std::vector<OptionShard>(static_cast<std::size_t>(topo.world_size), {0, rows, 0, cols, {}, {}});
    case ShardingType::kGridShard: break;  // not enumerated (allowed_sharding_types)
  }
  return {};
}

double kernel_bw_bytes_per_ms(ComputeKernel kernel, const TorchrecTopology& topo) {
  switch (kernel) {
    case ComputeKernel::kFused: return topo.hbm_mem_bw_bytes_per_ms;
    case ComputeKernel::kFusedUvm: return topo.hbm_to_ddr_mem_bw_bytes_per_ms / kUvmKernelBwDivisor;
    case ComputeKernel::kFusedUvmCaching:
      return (kUvmCachingRatio * topo.hbm_mem_bw_bytes_per_ms +
              (1.0 - kUvmCachingRatio) * topo.hbm_to_ddr_mem_bw_bytes_per_ms) /
             kUvmKernelBwDivisor;
    case ComputeKernel::kDense: return kDenseKernelBwShare * topo.hbm_mem_bw_bytes_per_ms;
  }
  return topo.hbm_mem_bw_bytes_per_ms;
}

Perf shard_perf(const TableSpec& table, ShardingType type, ComputeKernel kernel, int num_cols,
                const TorchrecTopology& topo) {
  const BatchShape b = batch_shape(table, topo);
  const double e = bytes_per_element(table.dtype);
  const double bw_dev = kernel_bw_bytes_per_ms(kernel, topo);
  switch (type) {
    case ShardingType::kTableWise:
    case ShardingType::kColumnWise: return table_wise_perf(b, num_cols, e, bw_dev, topo);
    case ShardingType::kRowWise: return row_wise_perf(b, num_cols, e, bw_dev, topo);
    case ShardingType::kTableRowWise: return table_row_wise_perf(b, num_cols, e, bw_dev, topo);
    case ShardingType::kDataParallel: return data_parallel_perf(b, table.num_rows(), num_cols, e, bw_dev, topo);
    case ShardingType::kGridShard: break;  // not enumerated (allowed_sharding_types)
  }
  return {};
}

Storage shard_storage(const TableSpec& table, ShardingType type, ComputeKernel kernel, const OptionShard& shard,
                      const TorchrecTopology& topo) {
  // Weights and optimizer state (tensor × (1 + m), §1.6; table.h defines m).
  const std::int64_t tensor_bytes = table.shard_bytes(shard.num_rows, shard.num_cols);
  const std::int64_t io_bytes = io_buffer_bytes(table, type, shard, topo);
  switch (kernel) {
    case ComputeKernel::kFused:
    case ComputeKernel::kDense: return {tensor_bytes + io_bytes, 0};  // DP: the whole table on every rank
    case ComputeKernel::kFusedUvm: return {io_bytes, tensor_bytes};
    case ComputeKernel::kFusedUvmCaching: {
      // HBM base = round(T·clf) spread over the shard's share, plus cache aux state (§1.6).
      const auto cache_bytes = ceil_bytes(std::round(static_cast<double>(tensor_bytes) * kUvmCachingRatio));
      const auto aux_bytes = ceil_bytes(static_cast<double>(shard.num_rows) * (4.0 + 16.0 * kUvmCachingRatio));
      return {cache_bytes + aux_bytes + io_bytes, tensor_bytes};
    }
  }
  return {};
}

std::vector<std::vector<ShardingOption>> enumerate_options(const Task& task, const TorchrecTopology& topo,
                                                           const PlannerOptions& options,
                                                           const std::function<bool()>& stop) {
  const auto types = allowed_sharding_types(task.constraints);
  std::vector<std::vector<ShardingOption>> by_table;
  for (std::size_t t = 0; t < task.workload.tables.size() && !stop(); ++t) {
    by_table.emplace_back();
    const TableSpec& table = task.workload.tables[t];
    // The table's own constraints narrow the task's (TorchRec's ParameterConstraints).
    const int min_partition =
        table.constraints.min_partition > 0 ? table.constraints.min_partition : options.min_partition;
    for (ShardingType type : types) {
      if (!table.allows(type)) continue;  // a sequence table: TorchRec's EC sharder offers no table_row_wise
      for (ComputeKernel kernel : allowed_kernels(task.constraints, type)) {
        if (!table.constraints.allow_uvm &&
            (kernel == ComputeKernel::kFusedUvm || kernel == ComputeKernel::kFusedUvmCaching))
          continue;
        ShardingOption option{t, type, kernel, shard_shapes(type, table.num_rows(), table.dim, topo, min_partition)};
        // Row-wise options have a shard per rank, nearly all alike: each shape is estimated once
        // (perf depends on the columns, storage on rows and columns).
        const OptionShard* previous = nullptr;
        for (OptionShard& s : option.shards) {
          if (previous && previous->num_cols == s.num_cols && previous->num_rows == s.num_rows) {
            s.perf = previous->perf, s.storage = previous->storage;
          } else {
            s.perf = shard_perf(table, type, kernel, s.num_cols, topo);
            s.storage = shard_storage(table, type, kernel, s, topo);
          }
          previous = &s;
        }
        by_table[t].push_back(std::move(option));
      }
    }
  }
  return by_table;
}

}  // namespace embshard::detail::torchrec

namespace embshard {

std::int64_t torchrec_kjt_reservation_bytes(double ids_per_rank) {
  using detail::torchrec::ceil_bytes;
  return ceil_bytes(ceil_bytes(ids_per_rank * detail::torchrec::kBigintBytes) * kTorchrecKjtCopies);
}

std::int64_t torchrec_table_budget_bytes(std::int64_t memory_bytes, double share, std::int64_t dense_bytes,
                                         std::int64_t kjt_bytes) {
  const std::int64_t kept = detail::torchrec::ceil_bytes(std::floor((1.0 - share) * static_cast<double>(memory_bytes)));
  return kept - kTorchrecDenseMultiplier * dense_bytes - kjt_bytes;
}

}  // namespace embshard
