#include "embshard/core/nnls.h"

#include <algorithm>
#include <cmath>

#include "embshard/core/error.h"

namespace embshard {

std::vector<double> relative_nnls(std::span<const NnlsRow> rows, std::span<const NnlsRow> relations) {
  EMBSHARD_CHECK(!rows.empty(), "least squares: needs at least one row");
  const std::size_t n = rows.front().features.size();
  std::vector<double> scale(n, 0.0);
  for (const NnlsRow& r : rows) {
    EMBSHARD_ASSERT(r.features.size() == n);
    for (std::size_t i = 0; i < n; ++i) scale[i] = std::max(scale[i], std::abs(r.features[i]));
  }
  for (const NnlsRow& r : relations) EMBSHARD_ASSERT(r.features.size() == n);
  std::vector<std::vector<double>> ata(n, std::vector<double>(n, 0.0));
  std::vector<double> atb(n, 0.0);
  std::vector<double> a(n);
  // Each residual is a · x − b in the scaled columns: b = 1 − c / y for a fitted row, −c for a relation.
  const auto add = [&](const NnlsRow& r, double weight, double b) {
    for (std::size_t i = 0; i < n; ++i) a[i] = scale[i] > 0 ? r.features[i] / scale[i] * weight : 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      atb[i] += a[i] * b;
      for (std::size_t j = 0; j < n; ++j) ata[i][j] += a[i] * a[j];
    }
  };
  for (const NnlsRow& r : rows) {
    if (r.target > 0) add(r, 1.0 / r.target, 1.0 - r.constant / r.target);
  }
  for (const NnlsRow& r : relations) add(r, 1.0, -r.constant);
  std::vector<double> x(n, 0.0);
  for (int sweep = 0; sweep < 200000; ++sweep) {
    double largest_step = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (ata[i][i] <= 0) continue;
      double gradient = -atb[i];
      for (std::size_t j = 0; j < n; ++j) gradient += ata[i][j] * x[j];
      const double updated = std::max(0.0, x[i] - gradient / ata[i][i]);
      largest_step = std::max(largest_step, std::abs(updated - x[i]));
      x[i] = updated;
    }
    if (largest_step < 1e-13) break;
  }
  for (std::size_t i = 0; i < n; ++i) x[i] = scale[i] > 0 ? x[i] / scale[i] : 0.0;
  return x;
}

std::vector<double> relative_nnls(std::span<const std::vector<double>> rows, std::span<const double> targets) {
  EMBSHARD_CHECK(rows.size() == targets.size() && !rows.empty(),
                 "least squares: needs as many targets as rows, and at least one");
  std::vector<NnlsRow> fitted;
  for (std::size_t k = 0; k < rows.size(); ++k) fitted.push_back({rows[k], 0.0, targets[k]});
  return relative_nnls(fitted);
}

}  // namespace embshard
