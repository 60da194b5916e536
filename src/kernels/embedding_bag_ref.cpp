// The reference implementation: the header's pseudo-code as plain loops, double accumulation,
// one thread. Slow on purpose; the other implementations are tested against it.
#include <cmath>
#include <map>
#include <vector>

#include "kernels/embedding_bag_internal.h"

namespace embshard::kernels::detail {
namespace {

double weight_at(const TableView& table, std::int64_t row, std::int64_t d) {
  const std::int64_t element = row * table.dim + d;
  if (table.dtype == WeightDtype::kF32) return static_cast<const float*>(table.weights)[element];
  return half_to_float(static_cast<const std::uint16_t*>(table.weights)[element]);
}

void store_weight(const TableView& table, std::int64_t row, std::int64_t d, double value) {
  const std::int64_t element = row * table.dim + d;
  if (table.dtype == WeightDtype::kF32) {
    static_cast<float*>(table.weights)[element] = static_cast<float>(value);
  } else {
    // fp16 semantics: the update happens in fp32, then rounds to binary16.
    static_cast<std::uint16_t*>(table.weights)[element] = float_to_half(static_cast<float>(value));
  }
}

/** First position in [begin, end) whose index is outside [0, rows), or -1. */
std::int64_t first_bad_index(const BagBatch& batch, std::int64_t begin, std::int64_t end, std::int64_t rows) {
  for (std::int64_t p = begin; p < end; ++p) {
    const std::int64_t row = index_at(batch, p);
    if (row < 0 || row >= rows) return p;
  }
  return -1;
}

/** Checks every index of every bag; positions are visited in increasing order. */
KernelStatus check_indices(std::span<const TableView> tables, const BagBatch& batch) {
  const std::int64_t batch_size = batch.batch_size;
  std::int64_t first_bad = -1;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto k = static_cast<std::int64_t>(t) * batch_size;
    const std::int64_t bad = first_bad_index(batch, batch.offsets[k], batch.offsets[k + batch_size], tables[t].rows);
    if (bad >= 0 && (first_bad < 0 || bad < first_bad)) first_bad = bad;
  }
  if (first_bad >= 0) return {KernelError::kBadIndex, first_bad};
  return {};
}

void apply_update(const TableView& table, std::int64_t row, const std::vector<double>& grad,
                  const OptimizerConfig& optimizer) {
  const std::int64_t dim = table.dim;
  double scale = optimizer.learning_rate;
  if (optimizer.kind == OptimizerKind::kRowwiseAdagrad) {
    double sum_squares = 0;
    for (const double g : grad) sum_squares += g * g;
    const double momentum = static_cast<double>(table.momentum[row]) + sum_squares / dim;
    table.momentum[row] = static_cast<float>(momentum);
    scale = optimizer.learning_rate / (std::sqrt(momentum) + optimizer.eps);
  }
  for (std::int64_t d = 0; d < dim; ++d) {
    store_weight(table, row, d, weight_at(table, row, d) - scale * grad[d]);
  }
}

}  // namespace

KernelStatus forward_ref(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out) {
  if (const KernelStatus status = check_indices(tables, batch); !status.ok()) return status;
  const std::vector<std::int64_t> d_offsets = dim_offsets(tables);
  const std::int64_t total_dim = d_offsets.back();
  const std::int64_t batch_size = batch.batch_size;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableView& table = tables[t];
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const std::int64_t k = static_cast<std::int64_t>(t) * batch_size + b;
      for (std::int64_t d = 0; d < table.dim; ++d) {
        double sum = 0;
        for (std::int64_t p = batch.offsets[k]; p < batch.offsets[k + 1]; ++p) {
          sum += weight_at(table, index_at(batch, p), d);
        }
        out[b * total_dim + d_offsets[t] + d] = static_cast<float>(sum);
      }
    }
  }
  return {};
}

KernelStatus backward_ref(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                          const OptimizerConfig& optimizer) {
  if (const KernelStatus status = check_indices(tables, batch); !status.ok()) return status;
  const std::vector<std::int64_t> d_offsets = dim_offsets(tables);
  const std::int64_t total_dim = d_offsets.back();
  const std::int64_t batch_size = batch.batch_size;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableView& table = tables[t];
    std::map<std::int64_t, std::vector<double>> grads;  // row → g_r, rows in increasing order
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const std::int64_t k = static_cast<std::int64_t>(t) * batch_size + b;
      const float* grad_row = grad_out.data() + b * total_dim + d_offsets[t];
      for (std::int64_t p = batch.offsets[k]; p < batch.offsets[k + 1]; ++p) {
        std::vector<double>& g = grads[index_at(batch, p)];
        g.resize(static_cast<std::size_t>(table.dim), 0.0);
        for (std::int64_t d = 0; d < table.dim; ++d) g[d] += grad_row[d];
      }
    }
    for (const auto& [row, g] : grads) apply_update(table, row, g, optimizer);
  }
  return {};
}

}  // namespace embshard::kernels::detail
