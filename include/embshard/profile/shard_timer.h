#pragma once
/**
 * @file shard_timer.h
 * @brief Times one device's shard — its pooled tables fused into one embedding-bag call, each
 *        sequence table a call of its own — on a real kernel, forward and backward separately.
 *
 * Construction does all the set-up outside the timed region: it draws `batch_size` samples of
 * each table's lookups from its generative model (`PoolTable`, see data/pool.h; tables known
 * only by statistics get one from `model_from_stats`), keeps the lookups that fall in the
 * shard's row range (re-based to the range, as a row-wise shard sees them), lays the pooled
 * tables' out table-major as one CSR batch of B bags with int32 indices and each sequence table's
 * (`ShardTableSpec::pooled` false) as a batch of one bag per lookup, and reserves each table
 * lazily (`LazyTable`) with just the looked-up rows materialised.
 *
 * `measure` then times, with the discipline of measure.h, the calls one after the other: the
 * forward (SUM pooling into an fp32 [bags × Σ dims] output: B rows for the pooled call, a row per
 * lookup for a sequence table's) and, separately, the backward with the fused optimizer (exact SGD by
 * default, as the papers time it) against a fixed gradient. Its cache flush evicts exactly the
 * operator's data — every looked-up row (and its optimizer state), the indices, offsets, output
 * and gradient — from all cache levels before each repeat (`evict_lines`). With the CUDA
 * implementation the shard is uploaded once and each pass is timed with GPU events; the GPU's
 * L2 (≤ 50 MB) is not flushed between repeats — a documented gap. Column shards duplicate their
 * table's lookups (the papers do): a table split in two column halves is two shard tables with
 * the same model and half the dim each.
 *
 * Memory tiers: a table's `remap` (RecShard's, data/remap.h) is applied to its drawn lookups
 * before the row range, so a tiered shard's hottest rows are its first `hbm_rows`. With `cuda`
 * the rows from `hbm_rows` on are placed in pinned host memory mapped into the GPU (UVM-like
 * reads over the host link); on the CPU implementations every row is host memory either way.
 */
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "embshard/data/pool.h"
#include "embshard/data/remap.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/lazy_table.h"
#include "embshard/profile/measure.h"

namespace embshard {

/** One table of a shard. */
struct ShardTableSpec {
  PoolTable model;  ///< lookup model of the whole table
  int dim = 0;      ///< columns this shard holds
  WeightType dtype = WeightType::kF32;
  std::int64_t row_begin = 0;  ///< rows of the table this shard holds: [row_begin, row_end)
  std::int64_t row_end = -1;   ///< -1: to the last row
  /// RecShard's remapping (data/remap.h), applied to each lookup before the row range: the
  /// shard's first hbm_rows rows are then the hottest. nullptr: rows as the model draws them.
  std::shared_ptr<const RowRemap> remap = nullptr;
  /// Rows of the shard (re-based, after the remap) in HBM: the first hbm_rows; −1 = all. The
  /// `cuda` implementation keeps rows [hbm_rows, rows) in host-mapped memory read over the bus
  /// (kernels/cuda_embedding_bag.h); `cpu` and `reference` have one tier and ignore it.
  std::int64_t hbm_rows = -1;
  /// false: a sequence table (TableSpec::pooled): every lookup is an output row of its own. It is
  /// timed as a call of its own with one bag per lookup — what FBGEMM's sequence TBE computes —
  /// writing a row per lookup and taking a gradient row per lookup.
  bool pooled = true;
};

struct ShardTiming {
  Timing fw;
  Timing bw;
  std::int64_t num_lookups = 0;     ///< lookups of the measured batch, all tables
  std::int64_t reserved_bytes = 0;  ///< full size of the shard's tables (and optimizer state)
  std::int64_t resident_bytes = 0;  ///< what the lazy backing really occupied
};

class ShardTimer {
 public:
  /**
   * Prepares the shard. `batch_number` picks an independent draw of the lookups. Throws Error
   * for a table with more than 2^31 − 1 rows (int32 indices) or an empty row range.
   */
  ShardTimer(std::vector<ShardTableSpec> tables, std::int64_t batch_size, std::uint64_t batch_number,
             kernels::EmbeddingBagImpl impl, kernels::OptimizerConfig optimizer = {});

  /** Times forward and backward; an empty shard costs 0 ms. */
  [[nodiscard]] ShardTiming measure(const MeasureOptions& options);

  [[nodiscard]] std::int64_t num_lookups() const;
  /** Table t's lookups as the kernels see them: re-based to the shard's rows, after the remap. */
  [[nodiscard]] std::span<const std::int32_t> table_lookups(std::size_t t) const;
  /** Rows table t writes to its call's output: the batch size, or a sequence table's lookups. */
  [[nodiscard]] std::int64_t output_rows(std::size_t t) const;

 private:
  /** One fused embedding-bag call: the shard's pooled tables (a bag per sample), or one sequence
   *  table (a bag per lookup). They run one after the other and their times add up. */
  struct Call {
    std::int64_t bags = 0;
    std::int64_t total_dim = 0;
    std::vector<kernels::TableView> views;
    std::vector<std::int64_t> hbm_rows;  ///< per table, −1 = all rows in HBM
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int32_t> indices;
    [[nodiscard]] kernels::BagBatch batch() const { return kernels::BagBatch::of(bags, offsets, indices); }
    /** Floats of its output, and of its gradient: a row of `total_dim` per bag. */
    [[nodiscard]] std::size_t output_floats() const { return static_cast<std::size_t>(bags * total_dim); }
  };

  /** Draws `table`'s lookups and appends them to `call`, as bags of samples or one per lookup. */
  void append_lookups(const ShardTableSpec& table, std::uint64_t batch_number, Call& call) const;
  void check(const kernels::KernelStatus& status, const char* what) const;
  /** The CUDA path: tables and lookups uploaded once, kernels timed with GPU events. */
  ShardTiming measure_on_gpu(const MeasureOptions& options, ShardTiming timing);
  /** Evicts the operator's data from the caches (file comment). */
  void flush_operands() const;

  std::int64_t batch_size_ = 0;
  kernels::EmbeddingBagImpl impl_;
  kernels::OptimizerConfig optimizer_;
  std::vector<LazyTable> tables_;
  std::vector<std::vector<std::int32_t>> touched_rows_;  ///< per table, sorted, distinct
  std::vector<Call> calls_;
  /// Table t is table `where_[t].second` of call `where_[t].first`.
  std::vector<std::pair<std::size_t, std::size_t>> where_;
  /// The output and its gradient, shared by the calls (sized for the largest).
  std::vector<float> out_;
  std::vector<float> grad_out_;
};

/**
 * The dense optimizer step of data-parallel copies (plan/plan.h) timed on this CPU: SGD over
 * `elements` fp32 weights from a dense gradient of the same size, which is then cleared for the
 * next step (w -= lr · g; g = 0), under `options` (flushing both arrays' lines). 0 elements: 0 ms.
 */
[[nodiscard]] Timing measure_dense_update(std::int64_t elements, const MeasureOptions& options);

}  // namespace embshard
