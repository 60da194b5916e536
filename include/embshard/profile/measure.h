#pragma once
/**
 * @file measure.h
 * @brief Timing discipline shared by every measurement: warm-up, a cache flush that really
 *        flushes, repeats, and robust summaries (median, trimmed mean).
 *
 * One measured repeat of an operation is
 *
 *     flush()            // evict the operation's data from every cache level
 *     t0 = now(); op(); t1 = now()   // steady_clock, nanoseconds
 *
 * preceded by `warmup` unmeasured repeats (first-touch page faults, lazy materialisation and
 * frequency ramp-up happen there). The papers' "L2 flush" allocated host memory and so did not
 * evict the GPU's cache (refs-zha.md pitfall 15). Here a flush really evicts: either the
 * operation's own cache lines (`evict_lines`: clflush on x86, which invalidates the line in every
 * level of the hierarchy — what the shard bench uses, since it knows every row it touches), or,
 * when the data is not known, `CacheFlusher`'s write-then-read of a buffer of 2 × LLC bytes
 * (on this project's 480 MiB-L3 VM that costs ~0.15 s per flush).
 *
 * Summaries: `median_ms` is the middle sample (mean of the two middle ones for an even count);
 * `trimmed_mean_ms` drops floor(trim · n) samples from each end (trim 0.2 of 10 keeps the middle
 * 6, AutoShard's choice) and averages the rest.
 */
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "embshard/core/clock.h"  // now_ms

namespace embshard {

struct MeasureOptions {
  int warmup = 2;   ///< unmeasured repeats before the measured ones
  int repeats = 5;  ///< measured repeats (>= 1)
  bool flush_cache = true;
  double trim = 0.2;  ///< share dropped from each end for the trimmed mean, [0, 0.5)
};

/** "" if the options are usable, else the first problem. */
[[nodiscard]] std::string find_error_in_measure_options(const MeasureOptions& options);

struct Timing {
  double median_ms = 0.0;
  double trimmed_mean_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  std::vector<double> samples_ms;  ///< in measurement order
};

/** Summarises samples (any order; at least one) with the definitions of the file comment. */
[[nodiscard]] Timing summarise(std::vector<double> samples_ms, double trim);

/** Size of the largest data cache of this machine (sysfs), or 32 MiB if it cannot be read. */
[[nodiscard]] std::size_t last_level_cache_bytes();

/** Evicts the CPU caches by streaming a private buffer of twice the last-level cache. */
class CacheFlusher {
 public:
  explicit CacheFlusher(std::size_t bytes = 2 * last_level_cache_bytes());
  void flush();
  [[nodiscard]] std::size_t bytes() const { return buffer_.size() * sizeof(long); }

 private:
  std::vector<long> buffer_;
  long sink_ = 0;  ///< read results land here so the reads are not optimised away
};

/**
 * Evicts the cache lines of [data, data + bytes) from every cache level (clflush + fence on x86;
 * elsewhere a no-op that returns false). Returns whether the lines were evicted.
 */
bool evict_lines(const void* data, std::size_t bytes);

/**
 * Times `op` as described in the file comment. `flush` (may be empty) runs before every repeat,
 * warm-up included, outside the timed region, when `options.flush_cache` is set.
 */
[[nodiscard]] Timing measure(const std::function<void()>& op, const MeasureOptions& options,
                             const std::function<void()>& flush = {});

/** As `measure`, for an operation that times itself (e.g. with GPU events) and returns ms. */
[[nodiscard]] Timing measure_self_timed(const std::function<double()>& timed_op, const MeasureOptions& options,
                                        const std::function<void()>& flush = {});

}  // namespace embshard
