#pragma once
/**
 * @file compute_sampler.h
 * @brief The compute cost-data collection of NeuroShard (refs-zha.md §3.4 a), on embshard's
 *        kernels: random fused shards of pool tables, timed and appended to a cost-sample file.
 *
 * Sample i (a pure function of the pool, the parameters, the seed and i):
 *   k      uniform in 1..max_tables
 *   tables k draws with replacement over the augmented configurations: every pool table at
 *          every dim of `dims` (NeuroShard: 856 tables × {128, 64, 32, 16, 8, 4})
 *   redraw the k tables (same k) until their fp32 size is at most max_bytes (NeuroShard: 4 GB)
 * The tables are fused into one shard in draw order and timed with `ShardTimer` (forward and
 * backward separately; the papers timed them together, their sum is fw_ms + bw_ms).
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/data/pool.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/cost_sample.h"

namespace embshard {

struct ComputeSamplerParams {
  int max_tables = 15;
  std::int64_t max_bytes = std::int64_t{4} << 30;
  std::vector<int> dims{128, 64, 32, 16, 8, 4};
};

/** "neuroshard-compute:dims=128/64/..,max_bytes=..,max_tables=15" — recorded in the file header. */
[[nodiscard]] std::string canonical_sampler_spec(const ComputeSamplerParams& params);

/** The tables of sample `index` (file comment). */
[[nodiscard]] std::vector<SampleTable> draw_compute_sample(const Pool& pool, const ComputeSamplerParams& params,
                                                           std::uint64_t seed, std::int64_t index);

/** Everything a compute collection run needs besides the pool and the file. */
struct ComputeProfileRun {
  ComputeSamplerParams sampler;
  std::uint64_t seed = 0;
  std::int64_t batch_size = 8192;
  std::int64_t num_samples = 100;  ///< the file holds this many samples when done
  MeasureOptions measure;
  kernels::EmbeddingBagImpl impl = kernels::EmbeddingBagImpl::kCpu;
  /// Set up (draw lookups, materialise rows) this many samples at a time on the context's threads
  /// before timing them one after another; 0 = set each up just before it is timed. Only for a
  /// GPU: on the CPU the set-up threads would share the cores being measured.
  std::int64_t prepare_ahead = 0;
};

/**
 * Appends samples to `path` until it holds `run.num_samples` (resuming an existing file), logging
 * progress and an ETA on `ctx`. Stops early, leaving a valid file, once `ctx`'s deadline passes.
 * Returns the number of samples in the file.
 */
std::int64_t collect_compute_samples(const Pool& pool, const ComputeProfileRun& run, const std::string& path,
                                     const Context& ctx);

}  // namespace embshard
