// Non-negative least squares on relative error (core/nnls.h).
#include <gtest/gtest.h>

#include <vector>

#include "embshard/core/nnls.h"

namespace embshard {
namespace {

TEST(Nnls, RecoversCoefficientsBesideAKnownConstantPart) {
  // y = 2·a + 3·b + c with c known per row: the fit finds 2 and 3, not a compromise absorbing c.
  std::vector<NnlsRow> rows;
  for (const auto& [a, b, c] : {std::tuple{1.0, 0.0, 5.0}, {0.0, 1.0, 1.0}, {2.0, 1.0, 0.5}, {1.0, 3.0, 7.0}}) {
    rows.push_back({{a, b}, c, 2.0 * a + 3.0 * b + c});
  }
  const std::vector<double> x = relative_nnls(rows);
  EXPECT_NEAR(x[0], 2.0, 1e-6);
  EXPECT_NEAR(x[1], 3.0, 1e-6);
}

TEST(Nnls, HoldsARelationAgainstRowsThatPullAway) {
  // The rows alone want x = (1, 1); a relation x0 − 3·x1 = 0, weighted heavily, wins.
  const std::vector<NnlsRow> rows = {{{1.0, 0.0}, 0.0, 1.0}, {{0.0, 1.0}, 0.0, 1.0}};
  const std::vector<double> free = relative_nnls(rows);
  EXPECT_NEAR(free[0], 1.0, 1e-6);
  EXPECT_NEAR(free[1], 1.0, 1e-6);
  const std::vector<NnlsRow> relation = {{{1000.0, -3000.0}, 0.0, 0.0}};
  const std::vector<double> held = relative_nnls(rows, relation);
  EXPECT_NEAR(held[0], 3.0 * held[1], 1e-3);
  // A relation's constant moves its solution: x0 − 3·x1 + 1 = 0.
  const std::vector<NnlsRow> shifted = {{{1000.0, -3000.0}, 1000.0, 0.0}};
  const std::vector<double> moved = relative_nnls(rows, shifted);
  EXPECT_NEAR(moved[0] - 3.0 * moved[1] + 1.0, 0.0, 1e-3);
}

TEST(Nnls, KeepsEveryCoefficientNonNegative) {
  // y = a − b would need a negative coefficient on b: it stays at zero.
  const std::vector<double> x =
      relative_nnls(std::vector<std::vector<double>>{{1, 1}, {2, 1}, {3, 2}}, std::vector<double>{0.5, 1.5, 1.5});
  EXPECT_GE(x[0], 0.0);
  EXPECT_EQ(x[1], 0.0);
}

}  // namespace
}  // namespace embshard
