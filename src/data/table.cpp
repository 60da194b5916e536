#include "embshard/data/table.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "embshard/core/error.h"

namespace embshard {

int bytes_per_element(WeightType type) { return type == WeightType::kF16 ? 2 : 4; }

const char* to_string(WeightType type) { return type == WeightType::kF16 ? "fp16" : "fp32"; }

WeightType parse_weight_type(const std::string& text, const std::string& where) {
  if (text == "fp32" || text == "float32") return WeightType::kF32;
  if (text == "fp16" || text == "float16") return WeightType::kF16;
  EMBSHARD_THROW(where, ": unknown weight type '", text, "' (expected fp32 or fp16)");
}

const char* to_string(OptimizerState state) {
  switch (state) {
    case OptimizerState::kNone: return "none";
    case OptimizerState::kRowWiseAdagrad: return "rowwise_adagrad";
    case OptimizerState::kAdagrad: return "adagrad";
    case OptimizerState::kAdam: return "adam";
  }
  return "?";
}

OptimizerState parse_optimizer_state(const std::string& text, const std::string& where) {
  for (OptimizerState s :
       {OptimizerState::kNone, OptimizerState::kRowWiseAdagrad, OptimizerState::kAdagrad, OptimizerState::kAdam})
    if (text == to_string(s)) return s;
  EMBSHARD_THROW(where, ": unknown optimizer '", text, "' (expected none, rowwise_adagrad, adagrad or adam)");
}

bool TableConstraints::allows(ShardingType type) const {
  if (sharding_types.empty()) return true;
  for (ShardingType t : sharding_types)
    if (t == type) return true;
  return false;
}

bool TableSpec::allows(ShardingType type) const {
  const bool sequence_runs = type != ShardingType::kTableRowWise && type != ShardingType::kGridShard;
  return constraints.allows(type) && (pooled || sequence_runs);
}

std::int64_t TableSpec::shard_bytes(std::int64_t rows, std::int64_t cols) const {
  const std::int64_t weights = rows * cols * bytes_per_element(dtype);
  switch (optimizer) {
    case OptimizerState::kNone: return weights;
    case OptimizerState::kRowWiseAdagrad:  // weights / dim, rounded up as TorchRec's ceil does
      return weights + (dim > 0 ? (weights + dim - 1) / dim : 0);
    case OptimizerState::kAdagrad: return 2 * weights;
    case OptimizerState::kAdam: return 3 * weights;
  }
  return weights;
}

std::string find_error_in_stats(const TableStats& s, const std::string& where) {
  std::ostringstream err;
  auto bad = [&](const char* field, const auto& value, const char* why) {
    err << where << ": " << field << " = " << value << " " << why;
    return err.str();
  };
  if (s.num_rows < 1 || s.num_rows > kMaxTableRows) return bad("num_rows", s.num_rows, "must lie in [1, 2^40]");
  if (!std::isfinite(s.pooling_factor) || s.pooling_factor < 0 || s.pooling_factor > kMaxPoolingFactor)
    return bad("pooling_factor", s.pooling_factor, "must be a finite number in [0, 1e6]");
  if (!std::isfinite(s.coverage) || s.coverage < 0 || s.coverage > 1)
    return bad("coverage", s.coverage, "must lie in [0, 1]");
  if (s.batch_size < 0 || s.batch_size > kMaxStatsBatchSize)
    return bad("batch_size", s.batch_size, "must lie in [0, 2^30]");
  if (s.num_indices < 0 || s.num_indices > kMaxNumIndices)
    return bad("num_indices", s.num_indices, "must lie in [0, 2^50]");
  if (s.num_distinct < 0 || s.num_distinct > s.num_indices)
    return bad("num_distinct", s.num_distinct, "must lie in [0, num_indices]");
  if (s.num_distinct > s.num_rows) return bad("num_distinct", s.num_distinct, "exceeds num_rows");
  double sum = 0;
  for (double b : s.bins) {
    if (!std::isfinite(b) || b < 0 || b > 1) return bad("bins", b, "must lie in [0, 1]");
    sum += b;
  }
  const bool empty = s.num_distinct == 0 && s.num_indices == 0;
  if (empty ? sum != 0 : std::abs(sum - 1) > 1e-6)
    return bad("bins", sum, empty ? "sum must be 0 for an empty table" : "must sum to 1");
  if (s.icdf.empty()) return "";
  if (static_cast<int>(s.icdf.size()) != kNumIcdfSteps) return bad("icdf", s.icdf.size(), "entries; expected 100");
  double prev = 0;
  for (double v : s.icdf) {
    if (!std::isfinite(v) || v < 0) return bad("icdf", v, "must be a finite number >= 0");
    if (v < prev) return bad("icdf", v, "is not non-decreasing");
    if (v > static_cast<double>(s.num_rows)) return bad("icdf", v, "exceeds num_rows");
    prev = v;
  }
  return "";
}

double distinct_rows_in_share(const TableStats& stats, double share) {
  const double distinct = static_cast<double>(stats.num_distinct);
  if (distinct <= 0.0 || share >= 1.0) return distinct;
  const double per_row = static_cast<double>(stats.num_indices) / distinct;
  return distinct * (1.0 - std::pow(1.0 - share, per_row));
}

TableStats stats_of_batch_share(TableStats stats, double share) {
  if (share >= 1.0) return stats;
  const std::int64_t distinct_before = stats.num_distinct;
  const double distinct = distinct_rows_in_share(stats, share);  // of the whole batch's statistics
  stats.batch_size = std::llround(static_cast<double>(stats.batch_size) * share);
  stats.num_indices = std::llround(static_cast<double>(stats.num_indices) * share);
  stats.num_distinct = std::min<std::int64_t>(stats.num_indices, std::llround(distinct));
  if (distinct_before > 0) {
    const double ratio = static_cast<double>(stats.num_distinct) / static_cast<double>(distinct_before);
    for (double& v : stats.icdf) v *= ratio;
  }
  if (stats.num_indices == 0) {
    stats.num_distinct = 0;
    stats.bins.fill(0.0);
    stats.icdf.clear();
  }
  return stats;
}

}  // namespace embshard
