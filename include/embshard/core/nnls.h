#pragma once
/**
 * @file nnls.h
 * @brief Non-negative least squares on relative error: the fit behind every calibrated `sim`
 *        coefficient (cost/analytic.h from measured samples, eval/paper_calibration.h from
 *        published figures).
 *
 * Minimises Σ_k ((rows[k] · x − y_k) / y_k)² over x ≥ 0 (rows with y_k ≤ 0 are skipped), by
 * projected coordinate descent on the normal equations with each column scaled by its largest
 * magnitude (which keeps features of very different units well conditioned); a column that is
 * zero in every row gets x = 0. Hand-written: a handful of unknowns, and no Debian package offers
 * a bounded least-squares solver that is lighter than these lines.
 */
#include <span>
#include <vector>

namespace embshard {

/** The fit of the file comment; every row has the same length. */
[[nodiscard]] std::vector<double> relative_nnls(std::span<const std::vector<double>> rows,
                                                std::span<const double> targets);

}  // namespace embshard
