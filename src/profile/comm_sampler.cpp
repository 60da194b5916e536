#include "embshard/profile/comm_sampler.h"

#include <algorithm>
#include <functional>

#include "embshard/core/context.h"
#include "embshard/core/error.h"

namespace embshard {
namespace {

/** Uniform integer in [lo, hi] (lo <= hi). */
std::int64_t uniform_between(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
}

int least_loaded_device(const std::vector<std::int64_t>& dim_sums) {
  return static_cast<int>(std::min_element(dim_sums.begin(), dim_sums.end()) - dim_sums.begin());
}

std::vector<double> draw_sleeps_ms(Rng& rng, int max_sleep_ms, int num_devices) {
  const std::int64_t spread = uniform_between(rng, 1, max_sleep_ms + 1);
  std::vector<double> sleeps(static_cast<std::size_t>(num_devices));
  for (double& s : sleeps) s = static_cast<double>(uniform_between(rng, 0, spread - 1));
  const double least = *std::min_element(sleeps.begin(), sleeps.end());
  for (double& s : sleeps) s -= least;
  return sleeps;
}

}  // namespace

std::string find_error_in_comm_sampler(const CommSamplerParams& params) {
  if (params.min_tables < 1 || params.max_tables < params.min_tables)
    return detail::concat("comm sampler: needs 1 <= min_tables <= max_tables, got ", params.min_tables, " and ",
                          params.max_tables);
  if (params.dims.empty()) return "comm sampler: needs at least one dim";
  for (int d : params.dims)
    if (d < 1) return detail::concat("comm sampler: dims must be positive, got ", d);
  if (params.max_sleep_ms < 0 || params.max_sleep_ms > 60000)
    return detail::concat("comm sampler: max_sleep_ms must lie in [0, 60000], got ", params.max_sleep_ms);
  return "";
}

std::string canonical_comm_sampler_spec(const CommSamplerParams& params, int num_devices) {
  std::string dims;
  for (int d : params.dims) dims += (dims.empty() ? "" : "/") + std::to_string(d);
  return detail::concat("neuroshard-comm:devices=", num_devices, ",dims=", dims, ",max_sleep_ms=", params.max_sleep_ms,
                        ",max_tables=", params.max_tables, ",min_tables=", params.min_tables);
}

DimPlacement random_dim_greedy(std::vector<int> dims, int num_devices, double random_share, Rng& rng) {
  EMBSHARD_CHECK(num_devices >= 1, "random_dim_greedy: needs at least one device");
  DimPlacement placement;
  std::stable_sort(dims.begin(), dims.end(), std::greater<>());
  placement.dim_sums.assign(static_cast<std::size_t>(num_devices), 0);
  for (int dim : dims) {
    const bool random = rng.uniform() < random_share;
    const int device = random ? static_cast<int>(rng.below(static_cast<std::uint64_t>(num_devices)))
                              : least_loaded_device(placement.dim_sums);
    placement.device_of_dim.push_back(device);
    placement.dim_sums[static_cast<std::size_t>(device)] += dim;
  }
  placement.dims_descending = std::move(dims);
  return placement;
}

CommDraw draw_comm_sample(const CommSamplerParams& params, std::uint64_t seed, std::int64_t index, int num_devices) {
  const std::string problem = find_error_in_comm_sampler(params);
  EMBSHARD_CHECK(problem.empty(), problem);
  EMBSHARD_CHECK(num_devices >= 1, "comm sampler: needs at least one device");
  Rng rng(derive_seed(seed, static_cast<std::uint64_t>(index)));
  CommDraw draw;
  const std::int64_t num_tables = uniform_between(rng, params.min_tables, params.max_tables);
  for (std::int64_t t = 0; t < num_tables; ++t) draw.dims.push_back(params.dims[rng.below(params.dims.size())]);
  draw.random_share = rng.uniform();
  draw.placement = random_dim_greedy(draw.dims, num_devices, draw.random_share, rng);
  draw.sleep_ms = draw_sleeps_ms(rng, params.max_sleep_ms, num_devices);
  return draw;
}

}  // namespace embshard
