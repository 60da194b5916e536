// CBC behind the solver-neutral MilpModel (cbc_solver.h). The only file that includes COIN headers.
#include "embshard/milp/cbc_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "embshard/core/error.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#pragma GCC diagnostic ignored "-Wclass-memaccess"
#endif
#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <ClpSimplex.hpp>
#include <ClpSolve.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace embshard {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/** `result` with the wall time since `start` stamped on it: how every solve returns. */
MilpResult finished(MilpResult result, Clock::time_point start) {
  result.wall_seconds = seconds_since(start);
  return result;
}

/** Takes `values` (not empty) as the answer: its objective, the status (optimal when the solver
 *  proved it) and what check_solution says of it, if anything. */
void take_solution(const MilpModel& model, std::vector<double> values, bool proven_optimal, MilpResult& result) {
  result.values = std::move(values);
  result.objective = model.objective_value(result.values);
  result.status = proven_optimal ? MilpStatus::kOptimal : MilpStatus::kFeasible;
  const std::string why = check_solution(model, result.values, 1e-6);
  if (!why.empty()) result.message = "solution check: " + why;
}

/** Loads `model` into a fresh Clp interface (columns, integrality, rows, objective). */
void load(const MilpModel& model, OsiClpSolverInterface& osi) {
  const int n = model.num_variables();
  const int m = model.num_constraints();
  const double inf = osi.getInfinity();
  auto finite = [inf](double v) { return std::isinf(v) ? (v > 0 ? inf : -inf) : v; };
  std::vector<double> col_lb(static_cast<std::size_t>(n)), col_ub(static_cast<std::size_t>(n)),
      obj(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    const MilpVariable& v = model.variables[static_cast<std::size_t>(j)];
    col_lb[static_cast<std::size_t>(j)] = finite(v.lower);
    col_ub[static_cast<std::size_t>(j)] = finite(v.upper);
    obj[static_cast<std::size_t>(j)] = v.objective;
  }
  // Row-ordered, built in one piece: row by row (appendRow) its copies grow with the square of
  // the rows (half of a 5,000-table plan's time in joint's row-cut program).
  std::vector<double> row_lb(static_cast<std::size_t>(m)), row_ub(static_cast<std::size_t>(m));
  std::vector<int> idx, lengths;
  std::vector<CoinBigIndex> starts;
  std::vector<double> val;
  for (int r = 0; r < m; ++r) {
    const MilpConstraint& c = model.constraints[static_cast<std::size_t>(r)];
    starts.push_back(static_cast<CoinBigIndex>(idx.size()));
    for (const MilpTerm& t : c.terms) {
      if (t.coef == 0.0) continue;
      idx.push_back(t.var);
      val.push_back(t.coef);
    }
    lengths.push_back(static_cast<int>(static_cast<CoinBigIndex>(idx.size()) - starts.back()));
    row_lb[static_cast<std::size_t>(r)] = c.sense == MilpSense::kLessEqual ? -inf : c.rhs;
    row_ub[static_cast<std::size_t>(r)] = c.sense == MilpSense::kGreaterEqual ? inf : c.rhs;
  }
  const CoinPackedMatrix matrix(false, n, m, static_cast<CoinBigIndex>(idx.size()), val.data(), idx.data(),
                                starts.data(), lengths.data());
  osi.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(), row_ub.data());
  for (int j = 0; j < n; ++j) {
    if (model.variables[static_cast<std::size_t>(j)].type != MilpVarType::kContinuous) {
      osi.setInteger(j);
    }
  }
  osi.setObjSense(1.0);
}

/** CbcMain1 wants a callback; this one never interrupts. */
int no_callback(CbcModel* /*model*/, int /*where_from*/) { return 0; }

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/** Below this many seconds for CBC, its preprocessing is off (solve_with_cbc). */
constexpr double kPreprocessFromSeconds = 10.0;

/** Whether `model` has no integer variable: a linear program, which Clp alone solves. */
bool is_linear_program(const MilpModel& model) {
  return std::all_of(model.variables.begin(), model.variables.end(),
                     [](const MilpVariable& v) { return v.type == MilpVarType::kContinuous; });
}

/**
 * A linear program (no integer variable; the model validated) by Clp's dual simplex alone
 * (cbc_solver.h): no CBC driver, so no lock; Clp's interrupt handling off (it keeps a static
 * model and swaps the SIGINT handler: not for solves on several threads) and `ClpSimplex` called
 * directly (OsiClp's `initialSolve` adds to a static clock); the warm start is kept when Clp's
 * answer is not better.
 */
MilpResult solve_linear_program(const MilpModel& model, const CbcOptions& options, Clock::time_point start,
                                MilpResult result, bool warm_ok) {
  OsiClpSolverInterface osi;
  osi.messageHandler()->setLogLevel(options.log ? 1 : 0);
  load(model, osi);
  ClpSimplex& clp = *osi.getModelPtr();
  clp.setLogLevel(options.log ? 1 : 0);  // its own handler, not the interface's
  const double spent = seconds_since(start);
  clp.setMaximumWallSeconds(std::max(options.time_limit_s - spent, 0.01));
  ClpSolve how;
  how.setSolveType(ClpSolve::useDual);
  how.setSpecialOption(2, 1);  // no interrupt handling: thread-safe
  clp.initialSolve(how);
  const int n = model.num_variables();
  bool optimal = clp.isProvenOptimal();
  std::vector<double> values;
  if (optimal) values.assign(clp.primalColumnSolution(), clp.primalColumnSolution() + n);
  if (warm_ok && (!optimal || result.warm_start_objective < model.objective_value(values))) {
    if (!optimal) result.message = "Clp stopped without an optimum; the feasible warm start is returned";
    values = model.initial_solution, optimal = false;
  }
  if (values.empty()) {
    result.status = clp.isProvenPrimalInfeasible() ? MilpStatus::kInfeasible
                    : clp.isProvenDualInfeasible() ? MilpStatus::kUnbounded
                    : clp.isAbandoned()            ? MilpStatus::kError
                                                   : MilpStatus::kNoSolution;
    if (result.status == MilpStatus::kError) result.message = "Clp abandoned the solve (numerical difficulties)";
    return finished(std::move(result), start);
  }
  take_solution(model, std::move(values), optimal, result);
  if (optimal) result.best_bound = result.objective, result.relative_gap = 0.0;
  return finished(std::move(result), start);
}

}  // namespace

MilpResult solve_with_cbc(const MilpModel& model, const CbcOptions& options) {
  const std::string error = find_error_in_model(model);
  EMBSHARD_CHECK(error.empty(), "MILP model: ", error);
  EMBSHARD_CHECK(std::isfinite(options.time_limit_s) && options.time_limit_s > 0.0,
                 "CBC options: time_limit_s must be positive (got ", options.time_limit_s, ")");
  EMBSHARD_CHECK(std::isfinite(options.relative_gap) && options.relative_gap >= 0.0,
                 "CBC options: relative_gap must be >= 0 (got ", options.relative_gap, ")");

  const auto start = Clock::now();
  MilpResult result;
  const int n = model.num_variables();

  // The warm start: only a feasible one goes to CBC.
  bool warm_ok = false;
  if (!model.initial_solution.empty()) {
    result.warm_start_objective = model.objective_value(model.initial_solution);
    const std::string why = check_solution(model, model.initial_solution, 1e-6);
    warm_ok = why.empty();
    result.warm_start = warm_ok ? "accepted" : "rejected: " + why;
  }

  if (n > 0 && is_linear_program(model)) return solve_linear_program(model, options, start, std::move(result), warm_ok);

  // CBC's driver (CbcMain0 / CbcMain1) keeps static state: one solve at a time in a process, so
  // that searches on several threads (joint's chains, compare's sharders) may each solve. The wait
  // counts against the limit; a call that gets no turn within it has only its warm start.
  static std::timed_mutex one_at_a_time;
  std::unique_lock<std::timed_mutex> turn(one_at_a_time, std::defer_lock);
  if (!turn.try_lock_for(std::chrono::duration<double>(options.time_limit_s))) {
    if (warm_ok) {
      result.values = model.initial_solution;
      result.objective = result.warm_start_objective;
      result.status = MilpStatus::kFeasible;
    } else {
      result.status = MilpStatus::kNoSolution;
    }
    result.message = "CBC was busy with another solve for the whole time limit";
    return finished(std::move(result), start);
  }

  OsiClpSolverInterface osi;
  osi.messageHandler()->setLogLevel(options.log ? 1 : 0);
  load(model, osi);

  CbcModel cbc(osi);  // copies the solver: results are read from `cbc`
  cbc.setLogLevel(options.log ? 1 : 0);
  cbc.messageHandler()->setLogLevel(options.log ? 1 : 0);

  bool plain_unbounded = false;
  if (n > 0 && options.strategy == CbcStrategy::kDefault) {
    CbcSolverUsefulData data;
    data.noPrinting_ = !options.log;
    data.useSignalHandler_ = false;
    CbcMain0(cbc, data);
    if (warm_ok) {
      // By column name: CbcMain1 matches names through its preprocessing.
      std::vector<std::string> names;
      std::vector<const char*> name_ptrs;
      names.reserve(static_cast<std::size_t>(n));
      for (int j = 0; j < n; ++j) names.push_back(cbc.solver()->getColName(j));
      for (const std::string& s : names) name_ptrs.push_back(s.c_str());
      cbc.setMIPStart(n, name_ptrs.data(), model.initial_solution.data());
    }
    // The limit counts from solve_with_cbc's start: what loading took is taken off CBC's.
    const double spent = seconds_since(start);
    const double left = std::max(options.time_limit_s - spent, 0.01);
    const std::string seconds = format_double(left);
    const std::string gap = format_double(options.relative_gap);
    const std::string log_level = options.log ? "1" : "0";
    std::vector<const char*> argv = {"embshard", "-log",          log_level.c_str(), "-timeMode", "elapsed",
                                     "-sec",     seconds.c_str(), "-ratioGap",       gap.c_str()};
    // Debian's CBC 2.10.8 can crash (a null read in CglPreProcess::postProcess) when a short limit
    // runs out around its preprocessing: about one run in six of an 80-table, 8-GPU RecShard model
    // at 1 s under AddressSanitizer. Short limits solve without it; extra_args may turn it back on.
    if (left < kPreprocessFromSeconds) {
      argv.push_back("-preprocess");
      argv.push_back("off");
    }
    for (const std::string& a : options.extra_args) argv.push_back(a.c_str());
    argv.push_back("-solve");
    argv.push_back("-quit");
    CbcMain1(static_cast<int>(argv.size()), argv.data(), cbc, no_callback, data);
  } else if (n > 0) {
    cbc.setUseElapsedTime(true);
    const double spent = seconds_since(start);
    cbc.setMaximumSeconds(std::max(options.time_limit_s - spent, 0.01));
    cbc.setAllowableFractionGap(options.relative_gap);
    cbc.setAllowableGap(1e-10);
    if (warm_ok) {
      cbc.setBestSolution(model.initial_solution.data(), n,
                          model.objective_value(model.initial_solution) - model.objective_offset, true);
    }
    // The root LP first (branchAndBound reuses its basis): bare branchAndBound reports an
    // unbounded relaxation as infeasible.
    cbc.initialSolve();
    if (cbc.solver()->isProvenDualInfeasible()) {
      plain_unbounded = true;
    } else {
      cbc.branchAndBound();
    }
  }

  // Read the outcome.
  const double* best = n > 0 ? cbc.bestSolution() : nullptr;
  std::vector<double> values;
  if (best != nullptr && cbc.getNumCols() == n) {
    values.assign(best, best + n);
    for (int j = 0; j < n; ++j) {
      if (model.variables[static_cast<std::size_t>(j)].type != MilpVarType::kContinuous) {
        values[static_cast<std::size_t>(j)] = std::round(values[static_cast<std::size_t>(j)]);
      }
    }
  }
  if (n == 0) {
    // Nothing to decide: feasible iff every row holds with zero activity.
    values.clear();
    const std::string why = check_solution(model, values, 1e-9);
    result.status = why.empty() ? MilpStatus::kOptimal : MilpStatus::kInfeasible;
    if (why.empty()) {
      result.objective = result.best_bound = model.objective_offset;
      result.relative_gap = 0.0;
    }
    return finished(std::move(result), start);
  }

  const bool proven_optimal = cbc.isProvenOptimal();
  // A search stopped by the clock has proven nothing about feasibility.
  const bool proven_infeasible = cbc.isProvenInfeasible() && !cbc.isSecondsLimitReached();
  const bool unbounded = cbc.isContinuousUnbounded() || cbc.secondaryStatus() == 7 || plain_unbounded;
  const bool abandoned = cbc.isAbandoned();
  double bound = cbc.getBestPossibleObjValue();
  if (!std::isfinite(bound) || std::abs(bound) >= 1e50) bound = -kMilpInfinity;
  result.nodes = cbc.getNodeCount();

  // A solution CBC returned, else the warm start (never worse than the warm start).
  if (!values.empty()) {
    const double obj = model.objective_value(values);
    if (warm_ok && result.warm_start_objective < obj) values = model.initial_solution;
  } else if (warm_ok) {
    // The warm start passed check_solution, so the model is feasible whatever CBC said.
    values = model.initial_solution;
    if (proven_infeasible) result.message = "CBC reported infeasible; the feasible warm start is returned";
  }

  if (!values.empty()) {
    take_solution(model, std::move(values), proven_optimal, result);
    if (bound != -kMilpInfinity) {
      result.best_bound = std::min(bound + model.objective_offset, result.objective);
    }
    result.relative_gap = result.best_bound == -kMilpInfinity
                              ? kMilpInfinity
                              : (result.objective - result.best_bound) / std::max(std::abs(result.objective), 1e-10);
    if (proven_infeasible) result.status = MilpStatus::kFeasible;
  } else if (unbounded) {  // before infeasible: CBC may flag both when the relaxation is unbounded
    result.status = MilpStatus::kUnbounded;
  } else if (proven_infeasible) {
    result.status = MilpStatus::kInfeasible;
  } else if (abandoned) {
    result.status = MilpStatus::kError;
    result.message = "CBC abandoned the search (numerical difficulties)";
  } else if (proven_optimal) {
    // Optimal without a solution can only mean the search space was empty.
    result.status = MilpStatus::kInfeasible;
  } else {
    result.status = MilpStatus::kNoSolution;
    if (bound != -kMilpInfinity) result.best_bound = bound + model.objective_offset;
  }
  return finished(std::move(result), start);
}

}  // namespace embshard
