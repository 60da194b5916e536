#pragma once
/**
 * @file comm_profile.h
 * @brief Collects NeuroShard's communication cost samples over MPI ranks, one rank per device
 *        (`mpirun -n D embshard profile comm --out comm.jsonl`).
 *
 * Every rank draws the same samples (comm_sampler.h) and times its side of each all-to-all
 * (all_to_all.h); rank 0 gathers the medians and appends them to the cost-sample file
 * (cost_sample.h), resuming where an earlier run stopped. Rank 0's own failures (the file) are
 * agreed on before any measurement, and a deadline reached on rank 0 stops every rank at the same
 * sample, so no rank is left waiting in a collective.
 */
#include <cstdint>
#include <functional>
#include <string>

#include "embshard/core/context.h"
#include "embshard/profile/all_to_all.h"
#include "embshard/profile/comm_sampler.h"
#include "embshard/profile/cost_sample.h"
#include "embshard/profile/measure.h"

namespace embshard {

/** What one `profile comm` run measures. */
struct CommProfileRun {
  CommSamplerParams sampler;
  std::uint64_t seed = 0;
  std::int64_t batch_size = 65536;
  std::int64_t num_samples = 100;  ///< the file holds this many samples when done
  MeasureOptions measure{.warmup = 5, .repeats = 10, .flush_cache = false, .trim = 0.2};
};

/** "" if the run is usable (samples ≥ 1, batch in [1, 2^24], a valid sampler), else the problem. */
[[nodiscard]] std::string find_error_in_comm_run(const CommProfileRun& run);

/** The header of a comm sample file written by `run` on `num_ranks` ranks. */
[[nodiscard]] CostSampleHeader comm_header(const CommProfileRun& run, int num_ranks);

/**
 * Collects the samples into `path` (file comment). Every rank calls it; on rank 0 `on_sample`
 * sees each new sample after it is written. Returns 0, or 1 on every rank when rank 0 could not
 * open the file (it printed why).
 */
int collect_comm_samples(const MpiSession& session, const CommProfileRun& run, const std::string& path,
                         const Context& ctx, const std::function<void(const CommSample&)>& on_sample = {});

}  // namespace embshard
