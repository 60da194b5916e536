#pragma once
/**
 * @file comm_sampler.h
 * @brief The communication cost-data sampler of NeuroShard (refs-zha.md §3.4 b): random
 *        placements of random tables over N devices, and the sleeps that make some devices late.
 *
 * Sample i for N devices is a pure function of (parameters, seed, i, N), drawn from the stream
 * `Rng(derive_seed(seed, i))` in this order:
 *
 *   T        uniform in [min_tables, max_tables]            (NeuroShard: randint(10, 60) → 10..59)
 *   dims     T draws, each uniform over `dims`              ({128, 64, 32, 16, 8, 4})
 *   p        uniform in [0, 1)                              (share of randomly placed tables)
 *   placement  random_dim_greedy(dims, N, p): the dims sorted descending; each goes, with
 *            probability p, to a uniformly random device, otherwise to the device with the
 *            smallest dim sum so far (lowest index on ties). One uniform draw decides "random?"
 *            for every dim; a second picks the device only when it is random.
 *   sleeps   spread uniform in 1..max_sleep_ms+1; each device (in order) uniform in
 *            0..spread-1 ms; then the minimum is subtracted, so at least one device sleeps 0 and
 *            every sleep lies in 0..max_sleep_ms (NeuroShard: 0..18)
 *
 * `dim_sums[d]` is the sum of the dims placed on device d (0 for an empty device). The sleeps
 * are whole milliseconds. With max_sleep_ms = 0 every sleep is 0 (`--no-sleep`).
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/data/random.h"

namespace embshard {

struct CommSamplerParams {
  int min_tables = 10;
  int max_tables = 59;
  std::vector<int> dims{128, 64, 32, 16, 8, 4};
  int max_sleep_ms = 18;
};

/** "" if the parameters are usable (1 <= min <= max tables, positive dims, sleep >= 0). */
[[nodiscard]] std::string find_error_in_comm_sampler(const CommSamplerParams& params);

/**
 * "neuroshard-comm:devices=4,dims=128/64/32/16/8/4,max_sleep_ms=18,max_tables=59,min_tables=10"
 * — recorded in the cost-sample header, so a file is only resumed by the same sampler on the
 * same number of devices.
 */
[[nodiscard]] std::string canonical_comm_sampler_spec(const CommSamplerParams& params, int num_devices);

/** Where random_dim_greedy put each dim (file comment). */
struct DimPlacement {
  std::vector<int> dims_descending;    ///< the dims in placement order
  std::vector<int> device_of_dim;      ///< parallel to dims_descending
  std::vector<std::int64_t> dim_sums;  ///< per device
};

/** NeuroShard's random_dim_greedy (file comment); `random_share` = p in [0, 1]. */
[[nodiscard]] DimPlacement random_dim_greedy(std::vector<int> dims, int num_devices, double random_share, Rng& rng);

/** One drawn communication sample (file comment). */
struct CommDraw {
  std::vector<int> dims;      ///< in draw order
  double random_share = 0.0;  ///< p
  DimPlacement placement;
  std::vector<double> sleep_ms;  ///< per device, whole milliseconds
};

/** Sample `index` of the stream `seed` for `num_devices` devices (file comment). */
[[nodiscard]] CommDraw draw_comm_sample(const CommSamplerParams& params, std::uint64_t seed, std::int64_t index,
                                        int num_devices);

}  // namespace embshard
