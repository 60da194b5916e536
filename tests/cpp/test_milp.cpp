// The solver-neutral MILP model, CBC behind it, and RecShard's formulation (milp/*.h): CBC against
// enumeration, the validators, and the RecShard MILP against an exhaustive search written here
// independently of the library's own cost evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "embshard/data/random.h"
#include "embshard/milp/cbc_solver.h"
#include "embshard/milp/milp.h"
#include "embshard/milp/recshard_milp.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::error_or_none;

constexpr double kInf = std::numeric_limits<double>::infinity();

CbcOptions exact_options(CbcStrategy strategy = CbcStrategy::kDefault) {
  CbcOptions o;
  o.time_limit_s = 60;
  o.relative_gap = 0.0;
  o.strategy = strategy;
  return o;
}

// ---- the model and its validators --------------------------------------------------------------

MilpModel small_model() {
  MilpModel m;
  const int x = m.add_binary("x", -1.0);
  const int y = m.add_variable("y", MilpVarType::kInteger, 0, 5, -2.0);
  const int z = m.add_continuous("z", 0, 10, 0.5);
  m.add_constraint("cap", {{x, 1.0}, {y, 1.0}}, MilpSense::kLessEqual, 3.0);
  m.add_constraint("link", {{z, 1.0}, {y, -1.0}}, MilpSense::kGreaterEqual, 0.5);
  m.add_constraint("fix", {{x, 1.0}}, MilpSense::kEqual, 1.0);
  return m;
}

TEST(Milp, FindErrorInModelNamesTheProblem) {
  EXPECT_EQ(find_error_in_model(small_model()), "");
  auto broken = [](const std::function<void(MilpModel&)>& f) {
    MilpModel m = small_model();
    f(m);
    return find_error_in_model(m);
  };
  EXPECT_NE(broken([](MilpModel& m) { m.variables[1].name = "x"; }).find("'x': duplicate variable name"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.variables[2].name = ""; }).find("variable 2 has an empty name"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.variables[2].lower = 11; }).find("'z': lower bound 11 is above upper bound 10"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.variables[0].upper = 2; }).find("'x': binary bounds [0, 2]"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.variables[1].lower = kInf; }).find("'y'"), std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.variables[2].objective = NAN; }).find("'z': objective coefficient"),
            std::string::npos);
  EXPECT_NE(
      broken([](MilpModel& m) { m.constraints[0].terms[1].coef = kInf; }).find("'cap': coefficient of variable 1 'y'"),
      std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) {
              m.constraints[1].terms[0].var = 3;
            }).find("'link': term 0 names variable 3, outside 0..2"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.constraints[0].terms[1].var = 0; }).find("'cap': variable 0 'x' appears twice"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.constraints[2].name = "cap"; }).find("'cap': duplicate constraint name"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) { m.constraints[2].rhs = NAN; }).find("'fix': rhs is not finite"),
            std::string::npos);
  EXPECT_NE(broken([](MilpModel& m) {
              m.initial_solution = {1, 2};
            }).find("initial_solution has 2 values for 3"),
            std::string::npos);
  // solve_with_cbc refuses the same model with the same line.
  MilpModel bad = small_model();
  bad.variables[2].lower = 11;
  EXPECT_NE(error_of([&] { (void)solve_with_cbc(bad); }).find("MILP model: variable 2 'z': lower bound"),
            std::string::npos);
  CbcOptions zero_time;
  zero_time.time_limit_s = 0;
  EXPECT_NE(error_of([&] { (void)solve_with_cbc(small_model(), zero_time); }).find("time_limit_s must be positive"),
            std::string::npos);
}

TEST(Milp, CheckSolutionCatchesViolations) {
  const MilpModel m = small_model();
  EXPECT_EQ(check_solution(m, {1, 2, 2.5}), "");
  EXPECT_NE(check_solution(m, {1, 3, 3.5}).find("constraint 0 'cap' is violated: activity 4 <= 3"), std::string::npos);
  EXPECT_NE(check_solution(m, {1, 2, 2.0}).find("'link' is violated"), std::string::npos);
  EXPECT_NE(check_solution(m, {0, 2, 2.5}).find("'fix' is violated"), std::string::npos);
  EXPECT_NE(check_solution(m, {1, 1.5, 2.5}).find("'y' = 1.5 is not integral"), std::string::npos);
  EXPECT_NE(check_solution(m, {1, 2, 11}).find("'z' = 11 is outside its bounds [0, 10]"), std::string::npos);
  EXPECT_NE(check_solution(m, {1, 2}).find("solution has 2 values for 3 variables"), std::string::npos);
  // Tolerance: a row may miss by tol · max(1, |rhs|).
  EXPECT_EQ(check_solution(m, {1, 2, 2.5 - 1e-7}), "");
  EXPECT_NE(check_solution(m, {1, 2, 2.5 - 1e-7}, 1e-9), "");
}

// ---- CBC against enumeration ------------------------------------------------------------------

/** Best objective over every integer point of a pure-integer model (bounds finite); +inf if none. */
double enumerate_optimum(const MilpModel& m) {
  const int n = m.num_variables();
  std::vector<double> v(static_cast<std::size_t>(n));
  double best = kInf;
  std::function<void(int)> rec = [&](int j) {
    if (j == n) {
      if (check_solution(m, v, 1e-9).empty()) best = std::min(best, m.objective_value(v));
      return;
    }
    const MilpVariable& var = m.variables[static_cast<std::size_t>(j)];
    for (double x = var.lower; x <= var.upper; x += 1.0) {
      v[static_cast<std::size_t>(j)] = x;
      rec(j + 1);
    }
  };
  rec(0);
  return best;
}

MilpModel random_integer_model(std::uint64_t seed) {
  Rng rng(seed);
  MilpModel m;
  const int n = 3 + static_cast<int>(rng.below(3));
  for (int j = 0; j < n; ++j) {
    const bool binary = rng.uniform() < 0.5;
    const double obj = std::round((rng.uniform() * 20 - 10) * 4) / 4;
    if (binary) {
      m.add_binary("v" + std::to_string(j), obj);
    } else {
      m.add_variable("v" + std::to_string(j), MilpVarType::kInteger, -1, 3, obj);
    }
  }
  const int rows = 2 + static_cast<int>(rng.below(3));
  for (int r = 0; r < rows; ++r) {
    std::vector<MilpTerm> terms;
    for (int j = 0; j < n; ++j) {
      if (rng.uniform() < 0.7) terms.push_back({j, std::round((rng.uniform() * 10 - 4) * 2) / 2});
    }
    const auto sense = static_cast<MilpSense>(rng.below(3));
    const double rhs = sense == MilpSense::kEqual ? std::round(rng.uniform() * 4) : std::round(rng.uniform() * 12 - 3);
    m.add_constraint("r" + std::to_string(r), terms, sense, rhs);
  }
  m.objective_offset = 1.5;
  return m;
}

TEST(Milp, CbcMatchesEnumerationOnRandomTinyModels) {
  int feasible = 0, infeasible = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const MilpModel m = random_integer_model(seed);
    const double want = enumerate_optimum(m);
    for (CbcStrategy strategy : {CbcStrategy::kDefault, CbcStrategy::kPlain}) {
      const MilpResult r = solve_with_cbc(m, exact_options(strategy));
      SCOPED_TRACE("seed " + std::to_string(seed) + (strategy == CbcStrategy::kPlain ? " plain" : " default"));
      if (want == kInf) {
        EXPECT_EQ(r.status, MilpStatus::kInfeasible);
        EXPECT_TRUE(r.values.empty());
      } else {
        ASSERT_EQ(r.status, MilpStatus::kOptimal) << r.message;
        EXPECT_NEAR(r.objective, want, 1e-6);
        EXPECT_EQ(check_solution(m, r.values, 1e-6), "");
        EXPECT_NEAR(m.objective_value(r.values), r.objective, 1e-9);
        EXPECT_LE(r.best_bound, r.objective + 1e-9);
        EXPECT_LE(r.relative_gap, 1e-6);
        EXPECT_EQ(r.message, "");
      }
    }
    (want == kInf ? infeasible : feasible)++;
  }
  // The random family must exercise both outcomes, or the test proves little.
  EXPECT_GE(feasible, 10);
  EXPECT_GE(infeasible, 3);
}

/** min z s.t. Σ_j w_i x_ij <= z for every bin j, Σ_j x_ij = 1: items into identical bins. */
MilpModel min_max_bins(const std::vector<double>& weights, int bins) {
  MilpModel m;
  const int z = m.add_continuous("z", 0, kInf, 1.0);
  std::vector<std::vector<int>> x(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    for (int j = 0; j < bins; ++j) x[i].push_back(m.add_binary("x" + std::to_string(i) + "_" + std::to_string(j)));
    std::vector<MilpTerm> one;
    for (int j = 0; j < bins; ++j) one.push_back({x[i][static_cast<std::size_t>(j)], 1.0});
    m.add_constraint("assign" + std::to_string(i), one, MilpSense::kEqual, 1.0);
  }
  for (int j = 0; j < bins; ++j) {
    std::vector<MilpTerm> load{{z, -1.0}};
    for (std::size_t i = 0; i < weights.size(); ++i) load.push_back({x[i][static_cast<std::size_t>(j)], weights[i]});
    m.add_constraint("load" + std::to_string(j), load, MilpSense::kLessEqual, 0.0);
  }
  return m;
}

/** The same assignment as a full solution vector (z = the largest load). */
std::vector<double> bins_solution(const std::vector<double>& weights, int bins, const std::vector<int>& bin_of) {
  std::vector<double> v(1 + weights.size() * static_cast<std::size_t>(bins), 0.0);
  std::vector<double> load(static_cast<std::size_t>(bins), 0.0);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    v[1 + i * static_cast<std::size_t>(bins) + static_cast<std::size_t>(bin_of[i])] = 1.0;
    load[static_cast<std::size_t>(bin_of[i])] += weights[i];
  }
  v[0] = *std::max_element(load.begin(), load.end());
  return v;
}

TEST(Milp, CbcMatchesEnumerationOnMinMaxWithAContinuousVariable) {
  Rng rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<double> w;
    for (int i = 0; i < 7; ++i) w.push_back(1 + std::floor(rng.uniform() * 1000) / 10);
    const int bins = 2 + trial % 2;
    // Enumerate bins^7 assignments.
    double want = kInf;
    for (int code = 0; code < static_cast<int>(std::pow(bins, 7)); ++code) {
      std::vector<double> load(static_cast<std::size_t>(bins), 0.0);
      for (int i = 0, c = code; i < 7; ++i, c /= bins)
        load[static_cast<std::size_t>(c % bins)] += w[static_cast<std::size_t>(i)];
      want = std::min(want, *std::max_element(load.begin(), load.end()));
    }
    for (CbcStrategy strategy : {CbcStrategy::kDefault, CbcStrategy::kPlain}) {
      const MilpResult r = solve_with_cbc(min_max_bins(w, bins), exact_options(strategy));
      ASSERT_EQ(r.status, MilpStatus::kOptimal);
      EXPECT_NEAR(r.objective, want, 1e-6 * want) << "trial " << trial;
    }
  }
}

TEST(Milp, CbcReportsInfeasibleAndEmptyModels) {
  MilpModel m;
  const int x = m.add_binary("x");
  const int y = m.add_binary("y");
  m.add_constraint("both", {{x, 1.0}, {y, 1.0}}, MilpSense::kGreaterEqual, 3.0);
  for (CbcStrategy strategy : {CbcStrategy::kDefault, CbcStrategy::kPlain}) {
    const MilpResult r = solve_with_cbc(m, exact_options(strategy));
    EXPECT_EQ(r.status, MilpStatus::kInfeasible);
    EXPECT_FALSE(has_solution(r.status));
    EXPECT_TRUE(r.values.empty());
  }
  // Integrality alone makes this one infeasible (its LP relaxation is feasible).
  MilpModel half;
  const int h = half.add_variable("h", MilpVarType::kInteger, 0, 10);
  half.add_constraint("twice", {{h, 2.0}}, MilpSense::kEqual, 5.0);
  EXPECT_EQ(solve_with_cbc(half, exact_options()).status, MilpStatus::kInfeasible);
  // A pure LP, and an unbounded model.
  MilpModel lp;
  const int c = lp.add_continuous("c", -kInf, kInf, 2.0);
  lp.add_constraint("floor", {{c, 1.0}}, MilpSense::kGreaterEqual, 1.5);
  MilpModel unbounded;
  const int u = unbounded.add_variable("u", MilpVarType::kInteger, 0, kInf, -1.0);
  unbounded.add_constraint("free", {{u, 1.0}}, MilpSense::kGreaterEqual, 0.0);
  for (CbcStrategy strategy : {CbcStrategy::kDefault, CbcStrategy::kPlain}) {
    const MilpResult r = solve_with_cbc(lp, exact_options(strategy));
    EXPECT_EQ(r.status, MilpStatus::kOptimal);
    EXPECT_NEAR(r.objective, 3.0, 1e-9);
    EXPECT_EQ(solve_with_cbc(unbounded, exact_options(strategy)).status, MilpStatus::kUnbounded)
        << (strategy == CbcStrategy::kPlain ? "plain" : "default");
  }
  MilpModel empty;
  empty.objective_offset = 2.0;
  const MilpResult e = solve_with_cbc(empty);
  EXPECT_EQ(e.status, MilpStatus::kOptimal);
  EXPECT_EQ(e.objective, 2.0);
}

TEST(Milp, LinearProgramsAreSolvedByClpAloneWithEveryStatus) {
  // Maximise 3x + 2y subject to x + y ≤ 4, x + 3y ≤ 6, x ≤ 3: the optimum is (3, 1), 11.
  MilpModel lp;
  const int x = lp.add_continuous("x", 0.0, 3.0, -3.0);
  const int y = lp.add_continuous("y", 0.0, kInf, -2.0);
  lp.add_constraint("sum", {{x, 1.0}, {y, 1.0}}, MilpSense::kLessEqual, 4.0);
  lp.add_constraint("mix", {{x, 1.0}, {y, 3.0}}, MilpSense::kLessEqual, 6.0);
  const auto expect_optimum = [](const MilpResult& r) {
    EXPECT_EQ(r.status, MilpStatus::kOptimal);
    EXPECT_NEAR(r.objective, -11.0, 1e-9);
    EXPECT_NEAR(r.best_bound, r.objective, 1e-12);
    ASSERT_EQ(r.values.size(), 2u);
    EXPECT_NEAR(r.values[0], 3.0, 1e-9);
    EXPECT_NEAR(r.values[1], 1.0, 1e-9);
  };
  testing::internal::CaptureStdout();
  expect_optimum(solve_with_cbc(lp));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");  // silent unless `log`
  lp.initial_solution = {0.0, 0.0};                       // feasible, and worse: checked, then beaten
  const MilpResult warm = solve_with_cbc(lp);
  EXPECT_EQ(warm.warm_start, "accepted");
  expect_optimum(warm);
  // Several threads at once: Clp's solves, without CBC's driver or Clp's interrupt handling,
  // share no state, so none waits for another.
  std::vector<MilpResult> results(4);
  std::vector<std::thread> threads;
  for (MilpResult& r : results) threads.emplace_back([&] { r = solve_with_cbc(lp); });
  for (std::thread& t : threads) t.join();
  for (const MilpResult& r : results) expect_optimum(r);
  MilpModel infeasible = lp;
  infeasible.initial_solution.clear();
  infeasible.add_constraint("far", {{x, 1.0}, {y, 1.0}}, MilpSense::kGreaterEqual, 9.0);
  EXPECT_EQ(solve_with_cbc(infeasible).status, MilpStatus::kInfeasible);
  MilpModel unbounded;
  const int u = unbounded.add_continuous("u", 0.0, kInf, -1.0);
  unbounded.add_constraint("free", {{u, 1.0}}, MilpSense::kGreaterEqual, 0.0);
  const MilpResult r = solve_with_cbc(unbounded);
  EXPECT_EQ(r.status, MilpStatus::kUnbounded);
  EXPECT_TRUE(r.values.empty());
}

TEST(Milp, WarmStartIsPassedOnOrRejected) {
  const std::vector<double> w = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  MilpModel m = min_max_bins(w, 3);
  m.initial_solution = bins_solution(w, 3, {0, 1, 2, 2, 1, 0, 0, 1, 2});  // loads 14, 15, 16
  for (CbcStrategy strategy : {CbcStrategy::kDefault, CbcStrategy::kPlain}) {
    const MilpResult r = solve_with_cbc(m, exact_options(strategy));
    EXPECT_EQ(r.warm_start, "accepted");
    EXPECT_DOUBLE_EQ(r.warm_start_objective, 16.0);
    EXPECT_EQ(r.status, MilpStatus::kOptimal);
    EXPECT_NEAR(r.objective, 15.0, 1e-9);
  }
  m.initial_solution[0] = 10.0;  // z below the loads: infeasible
  const MilpResult r = solve_with_cbc(m, exact_options());
  EXPECT_EQ(r.warm_start.rfind("rejected: constraint", 0), 0u) << r.warm_start;
  EXPECT_NE(r.warm_start.find("'load"), std::string::npos);
  EXPECT_NEAR(r.objective, 15.0, 1e-9);
}

TEST(Milp, TimeLimitReturnsTheIncumbentWithAStatus) {
  // 60 items with real weights into 6 identical bins: hard to prove (deps-probe §3).
  Rng rng(3);
  std::vector<double> w;
  for (int i = 0; i < 60; ++i) w.push_back(1 + 99 * rng.uniform());
  MilpModel m = min_max_bins(w, 6);
  std::vector<int> round_robin;
  for (int i = 0; i < 60; ++i) round_robin.push_back(i % 6);
  m.initial_solution = bins_solution(w, 6, round_robin);
  for (CbcStrategy strategy : {CbcStrategy::kDefault, CbcStrategy::kPlain}) {
    CbcOptions o;
    o.time_limit_s = 0.3;
    o.relative_gap = 0.0;
    o.strategy = strategy;
    const MilpResult r = solve_with_cbc(m, o);
    EXPECT_EQ(r.status, MilpStatus::kFeasible) << to_string(r.status);
    ASSERT_EQ(r.values.size(), static_cast<std::size_t>(m.num_variables()));
    EXPECT_EQ(check_solution(m, r.values), "");
    EXPECT_LE(r.objective, r.warm_start_objective + 1e-9);
    EXPECT_GT(r.relative_gap, 0.0);
    EXPECT_LT(r.relative_gap, 1.0);
    EXPECT_LT(r.wall_seconds, 5.0);
  }
  // Without a warm start the same limit still reports a status and, if any, a valid solution.
  m.initial_solution.clear();
  CbcOptions o;
  o.time_limit_s = 0.3;
  o.relative_gap = 0.0;
  const MilpResult r = solve_with_cbc(m, o);
  EXPECT_TRUE(r.status == MilpStatus::kFeasible || r.status == MilpStatus::kNoSolution) << to_string(r.status);
  if (has_solution(r.status)) {
    EXPECT_EQ(check_solution(m, r.values), "");
  }
  EXPECT_EQ(r.warm_start, "");
  EXPECT_TRUE(std::isnan(r.warm_start_objective));
}

// ---- RecShard ----------------------------------------------------------------------------------

RecShardTable table(const std::string& name, std::int64_t rows, std::vector<double> icdf, double pooling = 2.0,
                    double coverage = 1.0) {
  RecShardTable t;
  t.name = name;
  t.rows = rows;
  t.dim = 4;
  t.bytes_per_element = 4;
  t.pooling = pooling;
  t.coverage = coverage;
  t.icdf = std::move(icdf);
  return t;
}

RecShardInput base_input() {
  RecShardInput in;
  in.tables = {table("a", 100, {0, 0.05, 0.2, 0.5, 1.0}), table("b", 60, {0, 0.1, 0.3, 0.6, 0.9})};
  in.gpus = {{800, 2000}, {800, 2000}};
  in.hbm_bytes_per_s = 1e12;
  in.uvm_bytes_per_s = 1e10;
  in.batch_size = 1024;
  return in;
}

TEST(RecShardMilp, ValidationNamesTheProblem) {
  EXPECT_EQ(find_error_in_recshard_input(base_input()), "");
  auto broken = [](const std::function<void(RecShardInput&)>& f) {
    RecShardInput in = base_input();
    f(in);
    return error_or_none([&] { (void)build_recshard_milp(in); });
  };
  EXPECT_EQ(broken([](RecShardInput& in) { in.tables.clear(); }), "RecShard input: no tables");
  EXPECT_EQ(broken([](RecShardInput& in) { in.gpus.clear(); }), "RecShard input: no GPUs");
  EXPECT_NE(broken([](RecShardInput& in) {
              in.tables[1].icdf = {0, 0.3, 0.2, 0.6, 0.9};
            }).find("table 1 'b': icdf is not monotone: step 2 (0.2) is below step 1 (0.3)"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) {
              in.tables[0].icdf = {0, 1.5};
            }).find("table 0 'a': icdf step 1 is 1.5"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.tables[0].icdf = {0}; }).find("'a': icdf needs at least 2 points"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.hbm_bytes_per_s = 0; }).find("hbm_bytes_per_s must be positive"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.uvm_bytes_per_s = -1; }).find("uvm_bytes_per_s must be positive"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.uvm_bytes_per_s = kInf; }).find("uvm_bytes_per_s"), std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.batch_size = 0; }).find("batch_size must be positive"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.tables[1].coverage = 1.2; }).find("'b': coverage must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.tables[1].pooling = NAN; }).find("'b': pooling"), std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.tables[1].name = "a"; }).find("'a': duplicate table name"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.tables[0].rows = 0; }).find("'a': rows must be positive"),
            std::string::npos);
  EXPECT_NE(broken([](RecShardInput& in) { in.gpus[1].host_bytes = -5; }).find("gpu 1: host_bytes is negative"),
            std::string::npos);
  // Table a is 1600 bytes: it fits on neither GPU even using host memory...
  EXPECT_NE(broken([](RecShardInput& in) {
              in.gpus = {{500, 1000}, {0, 1099}};
            }).find("table 0 'a' (1600 bytes) fits on no GPU at any split, even using host memory"),
            std::string::npos);
  // ...though 1,600 bytes of HBM + host exist on one GPU, no split of a's ICDF fits them (rows are
  // split only at its steps: 0, 5, 20, 50 or 100 rows in HBM).
  EXPECT_NE(broken([](RecShardInput& in) {
              in.gpus = {{700, 900}};
            }).find("'a' (1600 bytes) fits on no GPU"),
            std::string::npos);
  EXPECT_EQ(broken([](RecShardInput& in) { in.gpus = {{800, 800}}; }), "(no error)");  // split at step 3
  // The other entry points refuse bad input the same way.
  RecShardInput bad = base_input();
  bad.hbm_bytes_per_s = 0;
  EXPECT_NE(error_of([&] { (void)recshard_greedy(bad); }).find("hbm_bytes_per_s"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)solve_recshard(bad); }).find("hbm_bytes_per_s"), std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)evaluate_recshard(base_input(), {{0, 5}, {0, 0}});
            }).find("'a': step 5 is outside 0..4"),
            std::string::npos);
}

TEST(RecShardMilp, CostAndRowsFollowThePaper) {
  RecShardInput in = base_input();
  in.tables[0].pooling = 2;
  in.batch_size = 1000;
  in.hbm_bytes_per_s = 1e9;
  in.uvm_bytes_per_s = 1e8;
  // L = 2 · 16 bytes · 1000 = 32,000 bytes; at step 2 of 4, pct = 0.5:
  // c = 1e3 ms/s · 32,000 · (0.5 / 1e9 + 0.5 / 1e8) = 0.176 ms.
  EXPECT_NEAR(recshard_table_cost_ms(in, 0, 2), 0.176, 1e-12);
  EXPECT_NEAR(recshard_table_cost_ms(in, 0, 0), 0.32, 1e-12);
  EXPECT_NEAR(recshard_table_cost_ms(in, 0, 4), 0.032, 1e-12);
  RecShardTable t = table("t", 10, {0, 0.25, 0.3, 0.31, 1.0});
  EXPECT_EQ(recshard_hbm_rows(t, 0), 0);
  EXPECT_EQ(recshard_hbm_rows(t, 1), 3);  // 2.5 rounds up
  EXPECT_EQ(recshard_hbm_rows(t, 2), 3);  // 0.3 · 10 = 3.0000000000000004 is 3
  EXPECT_EQ(recshard_hbm_rows(t, 3), 4);  // 3.1 rounds up
  EXPECT_EQ(recshard_hbm_rows(t, 4), 10);
  // evaluate_recshard: coverage weights the GPU cost; bytes split at the step.
  in.tables[1].coverage = 0.5;
  const RecShardSolution s = evaluate_recshard(in, {{1, 2}, {1, 4}});
  EXPECT_EQ(s.tables[0].hbm_bytes, 20 * 16);
  EXPECT_EQ(s.tables[0].host_bytes, 80 * 16);
  EXPECT_EQ(s.tables[1].hbm_rows, 54);
  EXPECT_NEAR(s.gpus[1].cost_ms, 0.176 + 0.5 * recshard_table_cost_ms(in, 1, 4), 1e-12);
  EXPECT_EQ(s.gpus[0].cost_ms, 0.0);
  EXPECT_EQ(s.max_cost_ms, s.gpus[1].cost_ms);
  // GPU 1 holds 20 + 54 hot rows of 16 bytes: 1184 bytes of HBM for 800.
  EXPECT_EQ(s.capacity_error, "gpu 1: HBM use 1184 bytes exceeds hbm_bytes 800");
  EXPECT_EQ(evaluate_recshard(in, {{0, 2}, {1, 3}}).capacity_error, "");
}

/** Paper cost (11) in ms, written again here so the exhaustive search shares no code with the library. */
double paper_cost_ms(const RecShardInput& in, std::size_t j, int step) {
  const RecShardTable& t = in.tables[j];
  const double pct = static_cast<double>(step) / static_cast<double>(t.icdf.size() - 1);
  const double demand = t.pooling * t.dim * t.bytes_per_element * static_cast<double>(in.batch_size);
  return 1000.0 * demand * (pct / in.hbm_bytes_per_s + (1 - pct) / in.uvm_bytes_per_s);
}

struct Exhaustive {
  double best = kInf;  ///< smallest max per-GPU cost over every feasible (gpu, step) per table
  std::int64_t feasible = 0;
};

Exhaustive exhaustive_search(const RecShardInput& in) {
  const std::size_t num_tables = in.tables.size();
  const std::size_t num_gpus = in.gpus.size();
  Exhaustive out;
  std::vector<int> gpu(num_tables, 0), step(num_tables, 0);
  std::function<void(std::size_t)> rec = [&](std::size_t j) {
    if (j == num_tables) {
      std::vector<double> cost(num_gpus, 0.0);
      std::vector<std::int64_t> hbm(num_gpus, 0), host(num_gpus, 0);
      for (std::size_t k = 0; k < num_tables; ++k) {
        const RecShardTable& t = in.tables[k];
        const std::int64_t rb = t.dim * t.bytes_per_element;
        const auto hot_rows = static_cast<std::int64_t>(
            std::ceil(t.icdf[static_cast<std::size_t>(step[k])] * static_cast<double>(t.rows) - 1e-9));
        const auto g = static_cast<std::size_t>(gpu[k]);
        hbm[g] += hot_rows * rb;
        host[g] += (t.rows - hot_rows) * rb;
        cost[g] += t.coverage * paper_cost_ms(in, k, step[k]);
      }
      for (std::size_t g = 0; g < num_gpus; ++g) {
        if (hbm[g] > in.gpus[g].hbm_bytes || host[g] > in.gpus[g].host_bytes) return;
      }
      ++out.feasible;
      out.best = std::min(out.best, *std::max_element(cost.begin(), cost.end()));
      return;
    }
    for (std::size_t g = 0; g < num_gpus; ++g) {
      for (int i = 0; i < static_cast<int>(in.tables[j].icdf.size()); ++i) {
        gpu[j] = static_cast<int>(g);
        step[j] = i;
        rec(j + 1);
      }
    }
  };
  rec(0);
  return out;
}

/** A tiny random instance: 2–3 tables, 2 GPUs (identical or not), 4-step ICDFs, tight memory. */
RecShardInput tiny_instance(std::uint64_t seed) {
  Rng rng(seed);
  RecShardInput in;
  const int tables = 2 + static_cast<int>(rng.below(2));
  std::int64_t total = 0;
  for (int j = 0; j < tables; ++j) {
    std::vector<double> icdf = {0.0};
    std::vector<double> cuts;
    for (int i = 0; i < 3; ++i) cuts.push_back(rng.uniform());
    std::sort(cuts.begin(), cuts.end());
    const double used = 0.5 + 0.5 * rng.uniform();
    for (double c : cuts) icdf.push_back(used * c * c);  // convex: hot rows first
    icdf.push_back(used);
    RecShardTable t = table("t" + std::to_string(j), 10 + static_cast<std::int64_t>(rng.below(40)), icdf,
                            1 + 9 * rng.uniform(), 0.2 + 0.8 * rng.uniform());
    total += t.rows * 16;
    in.tables.push_back(t);
  }
  const auto hbm = static_cast<std::int64_t>(static_cast<double>(total) * (0.1 + 0.35 * rng.uniform()));
  const auto host = static_cast<std::int64_t>(static_cast<double>(total) * (0.3 + 0.5 * rng.uniform()));
  in.gpus = {{hbm, host}, {hbm, host}};
  if (rng.uniform() < 0.3) in.gpus[1] = {hbm / 2, host + hbm / 2};  // not identical
  in.hbm_bytes_per_s = 1e12;
  in.uvm_bytes_per_s = (5 + 20 * rng.uniform()) * 1e9;
  in.batch_size = 4096;
  return in;
}

TEST(RecShardMilp, MatchesExhaustiveSearchOnTinyInstances) {
  int solved = 0, infeasible = 0, used_uvm_and_hbm = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const RecShardInput in = tiny_instance(seed);
    if (!find_error_in_recshard_input(in).empty()) continue;  // a table fits nowhere: not this test
    const Exhaustive want = exhaustive_search(in);
    for (RecShardSymmetry sym :
         {RecShardSymmetry::kNone, RecShardSymmetry::kOrderedLoads, RecShardSymmetry::kTableIndex}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " symmetry " + to_string(sym));
      RecShardOptions options;
      options.symmetry = sym;
      const RecShardResult r = solve_recshard(in, options, exact_options());
      if (want.feasible == 0) {
        EXPECT_EQ(r.milp.status, MilpStatus::kInfeasible);
        EXPECT_FALSE(r.solution.has_value());
        continue;
      }
      ASSERT_EQ(r.milp.status, MilpStatus::kOptimal) << r.milp.message;
      EXPECT_NEAR(r.milp.objective, want.best, 1e-7 * want.best);
      ASSERT_TRUE(r.solution.has_value());
      EXPECT_EQ(r.solution->capacity_error, "");
      EXPECT_NEAR(r.solution->max_cost_ms, want.best, 1e-7 * want.best);
      EXPECT_EQ(r.milp.message, "");
      if (sym == RecShardSymmetry::kNone) {
        bool mixed = false;
        for (const auto& t : r.solution->tables) mixed = mixed || (t.hbm_bytes > 0 && t.host_bytes > 0);
        used_uvm_and_hbm += mixed ? 1 : 0;
      }
    }
    (want.feasible == 0 ? infeasible : solved)++;
  }
  EXPECT_GE(solved, 15);
  EXPECT_GE(infeasible, 1);
  EXPECT_GE(used_uvm_and_hbm, 5);  // the optimum splits tables across HBM and UVM, not all-or-nothing
}

TEST(RecShardMilp, EncodedDecisionsSatisfyTheModelExactlyWhenTheyFit) {
  // Every (gpu, step) combination of a small instance, encoded: feasible in the model iff it fits
  // (exact byte capacities), with the model's C equal to the evaluated max cost.
  RecShardInput in = base_input();
  in.tables.push_back(table("c", 30, {0, 0.2, 0.4, 0.7, 1.0}, 5.0, 0.4));
  in.gpus = {{900, 1400}, {900, 1400}};
  const RecShardMilp milp = build_recshard_milp(in, {RecShardSymmetry::kNone, false});
  int fits = 0, overflows = 0;
  for (int code = 0; code < 1000; ++code) {
    std::vector<RecShardChoice> c;
    for (int j = 0, k = code; j < 3; ++j, k /= 10) c.push_back({k % 10 / 5, k % 5});
    const RecShardSolution s = evaluate_recshard(in, c);
    const std::vector<double> v = recshard_encode(in, milp, c);
    const std::string why = check_solution(milp.model, v, 1e-9);
    if (s.capacity_error.empty()) {
      ++fits;
      EXPECT_EQ(why, "") << code;
      EXPECT_NEAR(milp.model.objective_value(v), s.max_cost_ms, 1e-12);
      const std::vector<RecShardChoice> back = recshard_decode(milp, v);
      for (std::size_t j = 0; j < 3; ++j) {
        EXPECT_EQ(back[j].gpu, c[j].gpu);
        EXPECT_EQ(back[j].step, c[j].step);
      }
    } else {
      ++overflows;
      EXPECT_TRUE(why.find("'c9_g") != std::string::npos || why.find("'c10_g") != std::string::npos)
          << code << ": " << s.capacity_error << " / " << why;
    }
  }
  EXPECT_GT(fits, 50);
  EXPECT_GT(overflows, 50);
}

TEST(RecShardMilp, CanonicalChoicesSatisfyTheSymmetryRows) {
  RecShardInput in = base_input();
  in.tables.push_back(table("c", 30, {0, 0.2, 0.4, 0.7, 1.0}, 5.0, 0.4));
  in.gpus = {{900, 4000}, {900, 4000}, {900, 4000}};
  for (RecShardSymmetry sym : {RecShardSymmetry::kOrderedLoads, RecShardSymmetry::kTableIndex}) {
    const RecShardMilp milp = build_recshard_milp(in, {sym, false});
    // Table a on GPU 2, b on 1, c on 2: violates both rules as given.
    const std::vector<RecShardChoice> raw = {{2, 1}, {1, 1}, {2, 1}};
    ASSERT_EQ(evaluate_recshard(in, raw).capacity_error, "");
    EXPECT_NE(check_solution(milp.model, recshard_encode(in, milp, raw)), "") << to_string(sym);
    const std::vector<RecShardChoice> canon = recshard_canonical(in, raw, sym);
    EXPECT_EQ(check_solution(milp.model, recshard_encode(in, milp, canon)), "") << to_string(sym);
    EXPECT_DOUBLE_EQ(evaluate_recshard(in, canon).max_cost_ms, evaluate_recshard(in, raw).max_cost_ms);
  }
}

/** A medium instance: `tables` tables with 100-step skewed ICDFs over `gpus` identical GPUs. */
RecShardInput medium_instance(std::uint64_t seed, int tables, int gpus, double hbm_share) {
  Rng rng(seed);
  RecShardInput in;
  std::int64_t total = 0;
  for (int j = 0; j < tables; ++j) {
    RecShardTable t;
    t.name = "t" + std::to_string(j);
    t.rows = 1000 + static_cast<std::int64_t>(rng.below(200000));
    t.dim = 16 * (1 + static_cast<int>(rng.below(4)));
    t.bytes_per_element = 4;
    t.pooling = 1 + 30 * rng.uniform();
    t.coverage = 0.1 + 0.9 * rng.uniform();
    const double skew = 2 + 8 * rng.uniform();
    const double used = 0.3 + 0.7 * rng.uniform();
    for (int i = 0; i <= 100; ++i) t.icdf.push_back(used * std::pow(i / 100.0, skew));
    total += t.rows * t.dim * 4;
    in.tables.push_back(t);
  }
  const auto per_gpu = static_cast<double>(total) / gpus;
  in.gpus.assign(static_cast<std::size_t>(gpus),
                 {static_cast<std::int64_t>(per_gpu * hbm_share), static_cast<std::int64_t>(per_gpu * 1.5)});
  in.hbm_bytes_per_s = 900e9;
  in.uvm_bytes_per_s = 16e9;
  in.batch_size = 65536;
  return in;
}

TEST(RecShardMilp, GreedyWarmStartIsFeasible) {
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const RecShardInput in = medium_instance(seed, 40, 4, 0.3);
    const auto greedy = recshard_greedy(in);
    ASSERT_TRUE(greedy.has_value());
    const RecShardSolution s = evaluate_recshard(in, *greedy);
    EXPECT_EQ(s.capacity_error, "");
    for (RecShardSymmetry sym :
         {RecShardSymmetry::kNone, RecShardSymmetry::kOrderedLoads, RecShardSymmetry::kTableIndex}) {
      const RecShardMilp milp = build_recshard_milp(in, {sym, true});
      ASSERT_TRUE(milp.warm_start.has_value());
      ASSERT_EQ(milp.model.initial_solution.size(), static_cast<std::size_t>(milp.model.num_variables()));
      EXPECT_EQ(check_solution(milp.model, milp.model.initial_solution, 1e-9), "") << to_string(sym);
      EXPECT_NEAR(milp.model.objective_value(milp.model.initial_solution), s.max_cost_ms, 1e-9 * s.max_cost_ms);
    }
  }
  // Tight memory: the greedy may fail, and the model then has no warm start.
  RecShardInput tight = base_input();
  tight.gpus = {{800, 800}, {0, 0}};  // a alone needs the whole of GPU 0; b fits nowhere after it
  tight.tables[1].icdf = {0, 0.1, 0.3, 0.6, 1.0};
  tight.tables[1].rows = 10;
  EXPECT_FALSE(recshard_greedy(tight).has_value());
  EXPECT_FALSE(build_recshard_milp(tight).warm_start.has_value());
  EXPECT_TRUE(build_recshard_milp(tight).model.initial_solution.empty());
}

TEST(RecShardMilp, TimeLimitReturnsAnIncumbentNoWorseThanTheWarmStart) {
  const RecShardInput in = medium_instance(11, 80, 8, 0.25);
  CbcOptions o;
  o.time_limit_s = 1.0;
  o.relative_gap = 0.0;
  const RecShardResult r = solve_recshard(in, {}, o);
  ASSERT_TRUE(r.warm_start.has_value());
  ASSERT_TRUE(has_solution(r.milp.status)) << to_string(r.milp.status);
  EXPECT_EQ(r.milp.status, MilpStatus::kFeasible);  // not provable in a second
  ASSERT_TRUE(r.solution.has_value());
  EXPECT_EQ(r.solution->capacity_error, "");
  EXPECT_LE(r.solution->max_cost_ms, r.warm_start->max_cost_ms * (1 + 1e-9));
  EXPECT_NEAR(r.solution->max_cost_ms, r.milp.objective, 1e-6 * r.milp.objective);
  EXPECT_LE(r.milp.best_bound, r.milp.objective);
  EXPECT_GT(r.milp.best_bound, 0.0);
  EXPECT_LT(r.milp.wall_seconds, 10.0);
  EXPECT_EQ(r.milp.warm_start, "accepted");
}

TEST(RecShardMilp, SymmetryBreakingKeepsTheOptimumOnFourIdenticalGpus) {
  // 5 tables on 4 identical GPUs, 4-step ICDFs: every variant proves the same optimum.
  RecShardInput in = base_input();
  in.tables.push_back(table("c", 30, {0, 0.2, 0.4, 0.7, 1.0}, 5.0, 0.4));
  in.tables.push_back(table("d", 80, {0, 0.02, 0.1, 0.3, 0.8}, 8.0, 0.9));
  in.tables.push_back(table("e", 50, {0, 0.1, 0.2, 0.4, 1.0}, 3.0, 0.7));
  in.gpus.assign(4, {600, 1300});  // 2,400 bytes of HBM for 5,120 bytes of tables
  const Exhaustive want = exhaustive_search(in);
  ASSERT_GT(want.feasible, 0);
  for (RecShardSymmetry sym :
       {RecShardSymmetry::kNone, RecShardSymmetry::kOrderedLoads, RecShardSymmetry::kTableIndex}) {
    RecShardOptions options;
    options.symmetry = sym;
    const RecShardResult r = solve_recshard(in, options, exact_options());
    ASSERT_EQ(r.milp.status, MilpStatus::kOptimal) << to_string(sym);
    EXPECT_NEAR(r.milp.objective, want.best, 1e-7 * want.best) << to_string(sym);
  }
}

}  // namespace
}  // namespace embshard
