// Published-vs-generated comparison of the pool, and the fit of its skew parameters.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/core/parallel.h"
#include "embshard/data/index_batch.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"
#include "pool_model.h"

namespace embshard {
namespace {

/** Whole-pool expected figures at one batch size. */
struct PoolFigures {
  double num_indices = 0;
  double num_distinct = 0;
  std::array<double, kNumReuseBins> distinct_hist{};
  std::array<double, kNumReuseBins> access_hist{};
};

PoolFigures pool_figures(const Pool& pool, std::int64_t batch_size, int threads) {
  const auto& tables = pool.tables();
  std::vector<detail::Occupancy> occ(tables.size());
  parallel_for(tables.size(), threads, [&](std::size_t i) {
    const PoolTable& t = tables[i];
    occ[i] = detail::expected_occupancy(t.active_rows, t.zipf_alpha, t.zipf_offset,
                                        t.pooling_factor * static_cast<double>(batch_size));
  });
  PoolFigures f;
  for (const auto& o : occ) {
    f.num_indices += o.num_lookups;
    f.num_distinct += o.num_distinct;
    for (int j = 0; j < kNumReuseBins; ++j) {
      f.distinct_hist[j] += o.distinct_bins[j];
      f.access_hist[j] += o.access_bins[j];
    }
  }
  for (int j = 0; j < kNumReuseBins; ++j) {
    f.distinct_hist[j] /= f.num_distinct;
    f.access_hist[j] /= f.num_indices;
  }
  return f;
}

std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size(); ++i) r[order[i]] = static_cast<double>(i);
  return r;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const auto rx = ranks_of(x), ry = ranks_of(y);
  const double n = static_cast<double>(x.size());
  const double mean = (n - 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxy / std::sqrt(sxx * syy);
}

std::string bin_name(int j) {
  if (j == 0) return "(0,1]";
  if (j == kNumReuseBins - 1) return "(32768,inf)";
  std::ostringstream o;
  o << "(" << (1 << (j - 1)) << "," << (1 << j) << "]";
  return o.str();
}

// Tolerances of `pool --check` (docs/pool.md explains each).
constexpr double kMeanRowsRelTol = 0.03;
constexpr double kMeanPoolingRelTol = 0.01;
constexpr double kIndicesRelTol = 0.01;
constexpr double kDistinctRelTol = 0.10;
constexpr double kHistBinTol = 0.05;
constexpr double kCorrelationTol = 0.10;

void add_published_rows(const Pool& pool, const Context& ctx, std::vector<PoolCheckRow>& rows) {
  const PublishedDlrmStats& pub = kPublishedDlrm;
  std::vector<double> hash_sizes, pooling;
  double max_rows = 0, max_pooling = 0;
  for (const auto& t : pool.tables()) {
    const double raw_rows = t.pooling_factor > 0 ? static_cast<double>(t.num_rows) : 1.0;
    hash_sizes.push_back(raw_rows);
    pooling.push_back(t.pooling_factor);
    max_rows = std::max(max_rows, raw_rows);
    max_pooling = std::max(max_pooling, t.pooling_factor);
  }
  const double n = static_cast<double>(hash_sizes.size());
  const double mean_rows = std::accumulate(hash_sizes.begin(), hash_sizes.end(), 0.0) / n;
  const double mean_pooling = std::accumulate(pooling.begin(), pooling.end(), 0.0) / n;
  rows.push_back({"tables", static_cast<double>(pub.num_tables), n, 0});
  rows.push_back({"max hash size", static_cast<double>(pub.max_rows), max_rows, 0});
  rows.push_back({"mean hash size", pub.mean_rows, mean_rows, kMeanRowsRelTol * pub.mean_rows});
  rows.push_back({"max pooling factor", pub.max_pooling, max_pooling, 1e-9});
  rows.push_back({"mean pooling factor", pub.mean_pooling, mean_pooling, kMeanPoolingRelTol * pub.mean_pooling});
  rows.push_back({"spearman(hash size, pooling)", 0.0, spearman(hash_sizes, pooling), kCorrelationTol});
  const PoolFigures f = pool_figures(pool, pub.batch_size, ctx.num_threads);
  rows.push_back({"lookups at batch 65536", static_cast<double>(pub.num_indices), f.num_indices,
                  kIndicesRelTol * static_cast<double>(pub.num_indices)});
  rows.push_back({"distinct rows at batch 65536", static_cast<double>(pub.num_distinct), f.num_distinct,
                  kDistinctRelTol * static_cast<double>(pub.num_distinct)});
  for (int j = 0; j < kNumReuseBins; ++j) {
    rows.push_back({"distinct rows reused " + bin_name(j), pub.distinct_hist[j], f.distinct_hist[j], kHistBinTol});
  }
  for (int j = 0; j < kNumReuseBins; ++j) {
    rows.push_back({"lookups on rows reused " + bin_name(j), pub.access_hist[j], f.access_hist[j], kHistBinTol});
  }
}

void add_measured_rows(const Pool& pool, int count, std::int64_t batch, const Context& ctx,
                       std::vector<PoolCheckRow>& rows) {
  Rng rng(derive_seed(pool.seed(), 77));
  for (int i = 0; i < count; ++i) {
    const auto id = static_cast<std::int64_t>(rng.below(pool.tables().size()));
    const TableStats want = pool.expected_stats(id, batch);
    const TableStats got = compute_table_stats(pool.materialise(id, batch));
    const std::string name = "table " + std::to_string(id) + " measured ";
    // Sampling error of a mean over `batch` bags with the pool's length dispersion: 4 sigma.
    const double sd = std::sqrt(want.pooling_factor * (1 + want.pooling_factor) * 2 / batch);
    rows.push_back({name + "pooling factor", want.pooling_factor, got.pooling_factor, 4 * sd + 1e-9});
    rows.push_back({name + "distinct rows", static_cast<double>(want.num_distinct),
                    static_cast<double>(got.num_distinct), 0.05 * static_cast<double>(want.num_distinct) + 10});
    double l1 = 0;
    for (int j = 0; j < kNumReuseBins; ++j) l1 += std::abs(want.bins[j] - got.bins[j]);
    // Sampling noise of a histogram over D distinct rows is about 2 / sqrt(D) in L1.
    rows.push_back({name + "reuse bins (L1 distance)", 0.0, l1,
                    0.03 + 3.0 / std::sqrt(1.0 + static_cast<double>(got.num_distinct))});
    ctx.debug(name + "done");
  }
}

constexpr int kFitDims = 5;
using FitPoint = std::array<double, kFitDims>;

PoolParams with_point(PoolParams p, const FitPoint& x) {
  p.alpha_min = x[0];
  p.alpha_max = x[1];
  p.active_log10_min = x[2];
  p.active_log10_max = x[3];
  p.offset_log10_max = x[4];
  return p;
}

double fit_loss(std::uint64_t seed, const PoolParams& p, const Context& ctx) {
  if (p.alpha_min < 0 || p.alpha_max < p.alpha_min || p.active_log10_max < p.active_log10_min ||
      p.offset_log10_max < 0 || p.offset_log10_max > 6)
    return 1e9;
  const Pool pool = Pool::generate(seed, p);
  const PoolFigures f = pool_figures(pool, kPublishedDlrm.batch_size, ctx.num_threads);
  double loss = 0;
  for (int j = 0; j < kNumReuseBins; ++j) {
    loss += std::pow(f.distinct_hist[j] - kPublishedDlrm.distinct_hist[j], 2);
    loss += std::pow(f.access_hist[j] - kPublishedDlrm.access_hist[j], 2);
  }
  loss += std::pow(std::log(f.num_distinct / static_cast<double>(kPublishedDlrm.num_distinct)), 2);
  return loss;
}

}  // namespace

std::vector<PoolCheckRow> check_pool(const Pool& pool, int measured_tables, std::int64_t measured_batch,
                                     const Context& ctx) {
  std::vector<PoolCheckRow> rows;
  add_published_rows(pool, ctx, rows);
  add_measured_rows(pool, measured_tables, measured_batch, ctx, rows);
  return rows;
}

PoolParams fit_pool_params(std::uint64_t seed, const PoolParams& start, const Context& ctx) {
  // Nelder–Mead over the four skew parameters.
  auto loss = [&](const FitPoint& x) { return fit_loss(seed, with_point(start, x), ctx); };
  std::array<FitPoint, kFitDims + 1> simplex;
  simplex.fill(
      {start.alpha_min, start.alpha_max, start.active_log10_min, start.active_log10_max, start.offset_log10_max});
  for (int d = 0; d < kFitDims; ++d) simplex[d + 1][d] += d < 2 ? 0.1 : 0.3;
  std::array<double, kFitDims + 1> value{};
  for (std::size_t i = 0; i < simplex.size(); ++i) value[i] = loss(simplex[i]);
  for (int iter = 0; iter < 200; ++iter) {
    std::array<std::size_t, kFitDims + 1> idx{};
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return value[a] < value[b]; });
    const std::size_t worst = idx.back();
    FitPoint centroid{};
    for (std::size_t i = 0; i + 1 < idx.size(); ++i)
      for (int d = 0; d < kFitDims; ++d) centroid[d] += simplex[idx[i]][d] / kFitDims;
    auto along = [&](double t) {
      FitPoint p{};
      for (int d = 0; d < kFitDims; ++d) p[d] = centroid[d] + t * (simplex[worst][d] - centroid[d]);
      return p;
    };
    const FitPoint reflected = along(-1.0);
    const double fr = loss(reflected);
    if (fr < value[idx[0]]) {
      const FitPoint expanded = along(-2.0);
      const double fe = loss(expanded);
      simplex[worst] = fe < fr ? expanded : reflected;
      value[worst] = std::min(fe, fr);
    } else if (fr < value[idx[kFitDims - 1]]) {
      simplex[worst] = reflected;
      value[worst] = fr;
    } else {
      const FitPoint contracted = along(0.5);
      const double fc = loss(contracted);
      if (fc < value[worst]) {
        simplex[worst] = contracted;
        value[worst] = fc;
      } else {
        for (std::size_t i = 1; i < idx.size(); ++i) {
          for (int d = 0; d < kFitDims; ++d) simplex[idx[i]][d] = (simplex[idx[i]][d] + simplex[idx[0]][d]) / 2;
          value[idx[i]] = loss(simplex[idx[i]]);
        }
      }
    }
    const auto b = static_cast<std::size_t>(std::min_element(value.begin(), value.end()) - value.begin());
    std::ostringstream msg;
    msg << "fit iteration " << iter << ": alpha [" << simplex[b][0] << ", " << simplex[b][1]
        << "], log10 active ratio [" << simplex[b][2] << ", " << simplex[b][3] << "], log10 offset max "
        << simplex[b][4] << ", loss " << value[b];
    ctx.info(msg.str());
    if (*std::max_element(value.begin(), value.end()) - value[b] < 1e-8) break;
  }
  const auto b = static_cast<std::size_t>(std::min_element(value.begin(), value.end()) - value.begin());
  return with_point(start, simplex[b]);
}

}  // namespace embshard
