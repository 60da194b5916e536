#include "embshard/data/derived_stats.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/data/pool.h"

namespace embshard {

std::string DerivedStatsModel::origin() const {
  std::ostringstream out;
  out.precision(6);
  out << kDerivedStatsOrigin << "zipf_alpha=" << zipf_alpha << ",active_ratio=" << active_ratio
      << ",zipf_offset=" << zipf_offset;
  return out.str();
}

DerivedStatsModel pool_median_model() {
  const PoolParams fitted;
  DerivedStatsModel m;
  m.zipf_alpha = 0.5 * (fitted.alpha_min + fitted.alpha_max);
  m.active_ratio = std::pow(10.0, 0.5 * (fitted.active_log10_min + fitted.active_log10_max));
  // Pool offsets are round(10^u) − 1 with u uniform on [0, offset_log10_max]: the median u.
  m.zipf_offset = std::llround(std::pow(10.0, 0.5 * fitted.offset_log10_max)) - 1;
  return m;
}

std::string find_error_in_model(const DerivedStatsModel& m, const std::string& where) {
  if (!(m.zipf_alpha >= 0.0 && m.zipf_alpha <= 4.0))
    return detail::concat(where, ": zipf_alpha must lie in [0, 4], got ", m.zipf_alpha);
  if (!(m.active_ratio > 0.0 && m.active_ratio <= 1e3))
    return detail::concat(where, ": active_ratio must lie in (0, 1000], got ", m.active_ratio);
  if (m.zipf_offset < 0 || m.zipf_offset > 1000000)
    return detail::concat(where, ": zipf_offset must lie in [0, 1000000], got ", m.zipf_offset);
  return "";
}

TableStats derive_table_stats(std::int64_t num_rows, double pooling_factor, double coverage, std::int64_t batch_size,
                              const DerivedStatsModel& model, const std::string& where) {
  const std::string model_error = find_error_in_model(model, where);
  EMBSHARD_CHECK(model_error.empty(), model_error);
  EMBSHARD_CHECK(num_rows >= 1 && num_rows <= kMaxTableRows, where, ": num_rows must lie in [1, ", kMaxTableRows,
                 "], got ", num_rows);
  EMBSHARD_CHECK(pooling_factor >= 0.0 && pooling_factor <= kMaxPoolingFactor, where,
                 ": pooling_factor must lie in [0, ", kMaxPoolingFactor, "], got ", pooling_factor);
  EMBSHARD_CHECK(batch_size >= 1 && batch_size <= kMaxStatsBatchSize, where, ": batch_size must lie in [1, ",
                 kMaxStatsBatchSize, "], got ", batch_size);
  if (coverage < 0.0) coverage = std::min(1.0, pooling_factor);
  EMBSHARD_CHECK(coverage <= 1.0, where, ": coverage must lie in [0, 1], got ", coverage);
  EMBSHARD_CHECK(coverage <= pooling_factor, where, ": coverage ", coverage, " is above the pooling factor ",
                 pooling_factor, " (a sample that looks the table up looks up at least one row)");
  EMBSHARD_CHECK(pooling_factor == 0.0 || coverage > 0.0, where, ": coverage 0 with pooling factor ", pooling_factor);
  if (pooling_factor == 0.0) {  // never looked up: the statistics of an empty table
    TableStats empty;
    empty.num_rows = num_rows;
    empty.batch_size = batch_size;
    return empty;
  }
  PoolTable t;
  t.num_rows = num_rows;  // the table's own rows: a model's small tables are not padded to 100
  t.pooling_factor = pooling_factor;
  t.coverage = coverage;
  t.zipf_alpha = model.zipf_alpha;
  t.zipf_offset = model.zipf_offset;
  const double lookups_at_reference = pooling_factor * static_cast<double>(kPublishedDlrm.batch_size);
  t.active_rows = std::clamp<std::int64_t>(std::llround(model.active_ratio * lookups_at_reference), 1, t.num_rows);
  return expected_table_stats(t, batch_size);
}

}  // namespace embshard
