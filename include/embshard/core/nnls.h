#pragma once
/**
 * @file nnls.h
 * @brief Non-negative least squares on relative error: the fit behind every calibrated `sim`
 *        coefficient (cost/analytic.h from measured samples, eval/paper_calibration.h from
 *        published figures).
 *
 * Minimises Σ_k ((rows[k] · x + c_k − y_k) / y_k)² + Σ_j (relations[j] · x + c_j)² over x ≥ 0:
 * each fitted row predicts its target y_k with a known constant part c_k (rows with y_k ≤ 0 are
 * skipped); a relation is a linear equation the fit should hold, scaled by its caller to the
 * weight of a relative error. Solved by projected coordinate descent on the normal equations with
 * each column scaled by its largest magnitude (which keeps features of very different units well
 * conditioned); a column that is zero in every row gets x = 0. Hand-written: a handful of
 * unknowns, and no Debian package offers a bounded least-squares solver that is lighter than
 * these lines.
 */
#include <span>
#include <vector>

namespace embshard {

/** A row of the fit: its features, its known constant part and (fitted rows) its target. */
struct NnlsRow {
  std::vector<double> features;
  double constant = 0.0;
  double target = 0.0;  ///< fitted rows only: y_k
};

/** The fit of the file comment; every row and relation has the same length. */
[[nodiscard]] std::vector<double> relative_nnls(std::span<const NnlsRow> rows, std::span<const NnlsRow> relations = {});

/** The same with no constants or relations. */
[[nodiscard]] std::vector<double> relative_nnls(std::span<const std::vector<double>> rows,
                                                std::span<const double> targets);

}  // namespace embshard
