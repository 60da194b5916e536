#include "embshard/core/nnls.h"

#include <algorithm>
#include <cmath>

#include "embshard/core/error.h"

namespace embshard {

std::vector<double> relative_nnls(std::span<const std::vector<double>> rows, std::span<const double> targets) {
  EMBSHARD_CHECK(rows.size() == targets.size() && !rows.empty(),
                 "least squares: needs as many targets as rows, and at least one");
  const std::size_t n = rows.front().size();
  std::vector<double> scale(n, 0.0);
  for (const std::vector<double>& r : rows) {
    EMBSHARD_ASSERT(r.size() == n);
    for (std::size_t i = 0; i < n; ++i) scale[i] = std::max(scale[i], std::abs(r[i]));
  }
  std::vector<std::vector<double>> ata(n, std::vector<double>(n, 0.0));
  std::vector<double> atb(n, 0.0);
  std::vector<double> a(n);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (!(targets[k] > 0)) continue;
    for (std::size_t i = 0; i < n; ++i) a[i] = scale[i] > 0 ? rows[k][i] / scale[i] / targets[k] : 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      atb[i] += a[i];
      for (std::size_t j = 0; j < n; ++j) ata[i][j] += a[i] * a[j];
    }
  }
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

}  // namespace embshard
