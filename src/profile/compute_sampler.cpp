#include "embshard/profile/compute_sampler.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/parallel.h"
#include "embshard/core/progress.h"
#include "embshard/core/version.h"
#include "embshard/data/random.h"
#include "embshard/kernels/cuda_embedding_bag.h"
#include "embshard/profile/shard_timer.h"

namespace embshard {
namespace {

std::int64_t fp32_bytes(const Pool& pool, const std::vector<SampleTable>& tables) {
  std::int64_t bytes = 0;
  for (const SampleTable& t : tables) bytes += pool.table(t.pool_id).num_rows * t.dim * 4;
  return bytes;
}

CostSampleHeader compute_header(const Pool& pool, const ComputeProfileRun& run, int threads) {
  CostSampleHeader h;
  h.kind = SampleKind::kCompute;
  h.backend = std::string(kernels::to_string(run.impl));
  h.sampler = canonical_sampler_spec(run.sampler);
  h.seed = run.seed;
  h.pool_seed = pool.seed();
  h.batch_size = run.batch_size;
  h.precision = "fp32";
  h.measure = run.measure;
  // GPU samples name the GPU they were measured on; the sim fit keys its coefficients by it.
  h.fingerprint =
      this_machine(run.impl == kernels::EmbeddingBagImpl::kCuda ? kernels::cuda_device_name() : "cpu", threads);
  h.embshard_version = embshard_version();
  h.created_utc = utc_timestamp();
  return h;
}

/** A sample drawn and set up (lookups drawn, rows materialised), ready to be timed. */
struct PreparedSample {
  ComputeSample sample;
  std::unique_ptr<ShardTimer> bench;
};

PreparedSample prepare_sample(const Pool& pool, const ComputeProfileRun& run, std::int64_t index) {
  PreparedSample prepared;
  prepared.sample.index = index;
  prepared.sample.tables = draw_compute_sample(pool, run.sampler, run.seed, index);
  std::vector<ShardTableSpec> specs;
  for (const SampleTable& t : prepared.sample.tables) specs.push_back({pool.table(t.pool_id), t.dim});
  prepared.bench =
      std::make_unique<ShardTimer>(std::move(specs), run.batch_size, static_cast<std::uint64_t>(index), run.impl);
  return prepared;
}

ComputeSample measure_sample(PreparedSample prepared, const MeasureOptions& options) {
  const ShardTiming timing = prepared.bench->measure(options);
  prepared.bench.reset();  // frees the shard's tables before the next one is set up
  ComputeSample sample = std::move(prepared.sample);
  sample.fw_ms = timing.fw.median_ms;
  sample.bw_ms = timing.bw.median_ms;
  sample.fw_trimmed_ms = timing.fw.trimmed_mean_ms;
  sample.bw_trimmed_ms = timing.bw.trimmed_mean_ms;
  return sample;
}

/** Samples [first, last) set up on up to `threads` threads, in index order. */
std::vector<PreparedSample> prepare_samples(const Pool& pool, const ComputeProfileRun& run, std::int64_t first,
                                            std::int64_t last, int threads) {
  std::vector<PreparedSample> prepared(static_cast<std::size_t>(last - first));
  parallel_for(prepared.size(), threads,
               [&](std::size_t k) { prepared[k] = prepare_sample(pool, run, first + static_cast<std::int64_t>(k)); });
  return prepared;
}

}  // namespace

std::string canonical_sampler_spec(const ComputeSamplerParams& params) {
  std::string dims;
  for (int d : params.dims) dims += (dims.empty() ? "" : "/") + std::to_string(d);
  return detail::concat("neuroshard-compute:dims=", dims, ",max_bytes=", params.max_bytes,
                        ",max_tables=", params.max_tables);
}

std::vector<SampleTable> draw_compute_sample(const Pool& pool, const ComputeSamplerParams& params, std::uint64_t seed,
                                             std::int64_t index) {
  EMBSHARD_CHECK(params.max_tables >= 1 && !params.dims.empty(),
                 "compute sampler: needs max_tables >= 1 and at least one dim");
  Rng rng(derive_seed(seed, static_cast<std::uint64_t>(index)));
  const auto num_tables = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(params.max_tables)));
  const auto num_pool = static_cast<std::int64_t>(pool.tables().size());
  const auto num_configs = num_pool * static_cast<std::int64_t>(params.dims.size());
  for (int attempt = 0; attempt < 10000; ++attempt) {
    std::vector<SampleTable> tables;
    for (int k = 0; k < num_tables; ++k) {
      const std::int64_t config = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(num_configs)));
      tables.push_back({config % num_pool, params.dims[static_cast<std::size_t>(config / num_pool)]});
    }
    if (fp32_bytes(pool, tables) <= params.max_bytes) return tables;
  }
  EMBSHARD_THROW("compute sampler: no ", num_tables, "-table shard of at most ", params.max_bytes,
                 " bytes found in 10000 draws (raise max_bytes)");
}

std::int64_t collect_compute_samples(const Pool& pool, const ComputeProfileRun& run, const std::string& path,
                                     const Context& ctx) {
  CostSampleWriter writer(path, compute_header(pool, run, ctx.num_threads), ctx);
  const std::int64_t first = writer.next_index();
  Progress progress(ctx, "profile compute: samples", run.num_samples, first);
  const std::int64_t chunk = std::max<std::int64_t>(1, run.prepare_ahead);
  for (std::int64_t i = first; i < run.num_samples && !ctx.past_deadline();) {
    const std::int64_t last = std::min(run.num_samples, i + chunk);
    const int threads = run.prepare_ahead > 0 ? ctx.num_threads : 1;
    for (PreparedSample& prepared : prepare_samples(pool, run, i, last, threads)) {
      if (ctx.past_deadline()) break;  // a set-up sample left untimed is drawn again on resume
      writer.append(measure_sample(std::move(prepared), run.measure));
      progress.advance();
      ++i;
    }
  }
  if (writer.next_index() < run.num_samples) {
    ctx.warn(detail::concat(path, ": deadline reached after ", writer.next_index(), " samples"));
  }
  progress.finish(detail::concat(path, " holds ", writer.next_index(), " samples"));
  return writer.next_index();
}

}  // namespace embshard
