#pragma once
/**
 * @file task_gen.h
 * @brief The papers' task protocols, as seeded generators of task files.
 *
 * | protocol   | devices | tables per task               | dims                         | memory / device | weights |
 * |------------|---------|-------------------------------|------------------------------|-----------------|---------|
 * | neuroshard | 4 or 8  | 2.5·D .. 15·D−1, with replacement | uniform over {M, M/2, .., 4} | 4 GiB           | fp32 |
 * | dreamshard | 4       | N (default 50), disjoint train/test halves of the pool | all = M (16) | 5 GiB | fp16 |
 * | autoshard  | 8       | 10·D (80 on 8 .. 800 on 80)   | per pool table {M/2, M} (16, 32) | 7 GiB       | fp16    |
 *
 * DreamShard's halves come from the pool shuffled by `split_seed` (default 0), not by the task
 * seed: train tasks of one seed and test tasks of another share no table. AutoShard draws from the
 * whole pool (split=train|test, its main setting) or, for its unseen-table setting (paper 001
 * §5.5, Figure 10), from the same kind of halves: split=train_half takes every table from the first
 * half, split=test_half takes round(unseen_ratio · N) of them from the second half and the rest
 * from the first (unseen_ratio = 1: no table training saw; 0: only tables it could have seen). A
 * table's dim follows the task seed in the main setting and `split_seed` with halves, so a first-half
 * table is the same table, dim included, in training and test tasks.
 *
 * Sources: paper 003 Table 5 and the authors' gen_tasks.py (NeuroShard: tasks whose fp32 total
 * exceeds 4·D − 1 GiB are redrawn); paper 000 §C / 002 §4 (DreamShard DLRM-N (D)); paper 001 §5
 * and App. A (AutoShard). Lists come from embshard's own RNG: they are NOT the papers' exact
 * task lists (those need NumPy's legacy RandomState), only the same protocol.
 *
 * Tables come from a source list of statistics: the built-in pool by default, or a stats file
 * (`embshard stats` on the real dataset). Every task is checked with find_error_in_task.
 *
 * `recshard:model=rm1|rm2|rm3,scale=S` (paper 004 §3, §5; Table 2) makes its own tables instead
 * (the source is not used; tasks carry no pool ids): 397 tables of dim 64 (fp32) whose hash sizes
 * sum to exactly round(1,331,656,544 / 2,661,369,917 / 5,320,796,628 × S) rows; 16 A100s (one
 * node) with 24 GiB HBM and 128 GiB host memory each × S, UVM at 15.75 GB/s (PCIe 3.0 x16, §5.2;
 * the topology is written out as "custom"); batch 16,384; UVM allowed. Per table, from embshard's
 * RNG in streams that depend on (seed, index) only, so a table is the same feature in RM1, RM2
 * and RM3 and only its hash size doubles:
 *   hash size    ∝ 10^U(4, 8) (log-uniform, about 4 decades), scaled to the total, ≥ 100
 *   values       distinct feature values = 10^U(log 0.25, log 1.5) × its RM1 hash size; hashing
 *                them into H rows uses H·(1 − e^(−values/H)) rows (birthday paradox, §3.4:
 *                unused rows grow with the hash size), the pool model's active rows
 *   skew         Zipf–Mandelbrot over the used rows (§3.1, Fig. 5: most power laws, a few
 *                flat): alpha U(0.8, 1.3), or U(0, 0.5) for 8% of tables; offset 10^U(0, 2) − 1
 *   pooling      mean lookups of a sample that has the feature (§3.2, Fig. 6a: long tail, a few
 *                tens to ~200): 1 for 25% (one-hot), else 12·e^N(0,1) clipped to [1, 200]
 *   coverage     (§3.3, Fig. 6b: < 1% to 100%): U(0.9, 1) for 40%, else 10^U(−2.3, 0)
 * Statistics are the pool model's expected ones (data/pool.h, expected_table_stats) at the task's
 * batch, except the ICDF: RecShard profiles the skew on a sample of the training data (§4.1), so
 * it is the model's ICDF over `profile_batches` (1024) batches — icdf[99] then counts the rows
 * seen in the profile, which can exceed one batch's num_distinct; rows never seen are the cold
 * tail RecShard leaves in host memory.
 */
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "embshard/core/registry.h"
#include "embshard/data/pool.h"
#include "embshard/data/task.h"

namespace embshard {

/**
 * Where generated tasks take their tables from: the built-in pool (statistics computed on demand,
 * once per table, only for the tables tasks draw) or a list of statistics (a stats file).
 * Copies share one cache; thread-safe.
 */
class TableSource {
 public:
  /** The pool of `seed`, with expected statistics at `batch_size`. */
  static TableSource from_pool(std::uint64_t seed, std::int64_t batch_size);
  /** Tables from a statistics file; tasks then carry no pool ids. */
  static TableSource from_stats(std::vector<TableStats> tables);

  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::int64_t num_rows(std::size_t i) const;
  [[nodiscard]] TableStats stats(std::size_t i) const;
  [[nodiscard]] bool from_pool() const { return pool_ != nullptr; }
  [[nodiscard]] std::uint64_t pool_seed() const { return pool_ ? pool_->seed() : 0; }

 private:
  struct Cache;
  std::shared_ptr<const Pool> pool_;
  std::int64_t batch_size_ = 0;
  std::vector<TableStats> tables_;
  std::shared_ptr<Cache> cache_;
};

class TaskGenerator {
 public:
  virtual ~TaskGenerator() = default;
  /** Canonical spec of this generator (with all parameters). */
  [[nodiscard]] virtual std::string spec() const = 0;
  /** Global batch of the tasks it generates (their statistics are taken at this batch). */
  [[nodiscard]] virtual std::int64_t batch_size() const = 0;
  /** Task `index` of the sequence for `seed`; deterministic in (seed, index). */
  [[nodiscard]] virtual Task generate(const TableSource& source, std::uint64_t seed, int index) const = 0;
};

/** neuroshard, dreamshard, autoshard, recshard. */
[[nodiscard]] const Registry<TaskGenerator>& task_protocol_registry();

/** Builds the generator of `spec` (e.g. "neuroshard:devices=8,max_dim=64"). */
[[nodiscard]] std::unique_ptr<TaskGenerator> make_task_generator(const std::string& spec);

/** The path of task `index` in `dir`: DIR/000.json, DIR/001.json, ... */
[[nodiscard]] std::string task_file_path(const std::string& dir, int index);

/** Writes tasks 0..count-1 as `task_file_path(dir, i)`; returns the paths. */
std::vector<std::string> write_tasks(const TaskGenerator& gen, const TableSource& source, std::uint64_t seed, int count,
                                     const std::string& dir);

/** The built-in default task (a NeuroShard-protocol task, 4 devices, max dim 128, seed 0). */
[[nodiscard]] Task default_task();

}  // namespace embshard
