#pragma once
/**
 * @file milp.h
 * @brief A solver-neutral mixed integer linear program (MILP): what is to be solved, what a
 *        solver hands back, and how a candidate solution is checked.
 *
 * A `MilpModel` is
 *
 *   minimise    objective_offset + Σ_j objective_j · v_j
 *   subject to  Σ_k coef_k · v_{var_k}  (<= | >= | ==)  rhs          for every constraint
 *               lower_j <= v_j <= upper_j                            for every variable
 *               v_j integral                                         for integer and binary j
 *
 * Binary variables are integer variables whose bounds lie within [0, 1]. Bounds may be ±infinity
 * (`kMilpInfinity`) on continuous and integer variables. `initial_solution`, when not empty, is a
 * value for every variable that the solver may start from (a warm start); it need not be feasible
 * — a solver checks it with `check_solution` and ignores it (saying so) if it is not.
 *
 * Nothing here knows about a particular solver: `cbc_solver.h` solves a model with CBC, and the
 * tests solve tiny models by enumeration. Builders (e.g. `recshard_milp.h`) keep their own maps
 * from their symbols to variable indices.
 */
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace embshard {

/** Infinite bound (a variable bound of ±kMilpInfinity means none). */
inline constexpr double kMilpInfinity = std::numeric_limits<double>::infinity();

enum class MilpVarType { kContinuous, kInteger, kBinary };
enum class MilpSense { kLessEqual, kGreaterEqual, kEqual };

[[nodiscard]] const char* to_string(MilpVarType type);
/** "<=", ">=", "==". */
[[nodiscard]] const char* to_string(MilpSense sense);

struct MilpVariable {
  std::string name;  ///< non-empty, unique among the variables
  MilpVarType type = MilpVarType::kContinuous;
  double lower = 0.0;
  double upper = kMilpInfinity;
  double objective = 0.0;  ///< coefficient in the (minimised) objective
};

/** One non-zero of a constraint row: coef · v[var]. */
struct MilpTerm {
  int var = 0;
  double coef = 0.0;
};

struct MilpConstraint {
  std::string name;             ///< non-empty, unique among the constraints
  std::vector<MilpTerm> terms;  ///< sparse row; each variable at most once
  MilpSense sense = MilpSense::kLessEqual;
  double rhs = 0.0;
};

/** A MILP (file comment). Plain data; the add_* helpers return the new index. */
struct MilpModel {
  std::vector<MilpVariable> variables;
  std::vector<MilpConstraint> constraints;
  double objective_offset = 0.0;
  /** Empty (no warm start) or one value per variable. */
  std::vector<double> initial_solution;

  int add_variable(std::string name, MilpVarType type, double lower, double upper, double objective = 0.0);
  int add_continuous(std::string name, double lower, double upper, double objective = 0.0) {
    return add_variable(std::move(name), MilpVarType::kContinuous, lower, upper, objective);
  }
  int add_binary(std::string name, double objective = 0.0) {
    return add_variable(std::move(name), MilpVarType::kBinary, 0.0, 1.0, objective);
  }
  int add_constraint(std::string name, std::vector<MilpTerm> terms, MilpSense sense, double rhs);

  [[nodiscard]] int num_variables() const { return static_cast<int>(variables.size()); }
  [[nodiscard]] int num_constraints() const { return static_cast<int>(constraints.size()); }
  /** objective_offset + Σ objective_j · values_j (values.size() must be num_variables()). */
  [[nodiscard]] double objective_value(const std::vector<double>& values) const;
};

/**
 * Returns "" if `model` is well formed, else one line naming the first problem and the variable
 * or constraint it is in: empty or duplicate names, NaN or infinite coefficients / objective /
 * rhs, lower > upper, lower == +inf or upper == -inf, binary bounds outside [0, 1], term indices
 * out of range, a variable twice in one row, and an `initial_solution` of the wrong size or with
 * non-finite values.
 */
[[nodiscard]] std::string find_error_in_model(const MilpModel& model);

/**
 * Returns "" if `values` satisfies every bound, integrality and constraint of `model` within
 * `tol`, else one line naming the first violated one with its value. A bound or integrality is
 * violated by more than `tol` absolutely; a row when its activity misses rhs by more than
 * tol · max(1, |rhs|). `values` of the wrong size is reported too.
 */
[[nodiscard]] std::string check_solution(const MilpModel& model, const std::vector<double>& values, double tol = 1e-6);

/** How a solve ended. */
enum class MilpStatus {
  kOptimal,     ///< proven optimal within the requested relative gap
  kFeasible,    ///< a solution, not proven optimal: the time limit (or node limit) hit
  kInfeasible,  ///< proven: no solution exists
  kUnbounded,   ///< the relaxation is unbounded
  kNoSolution,  ///< the time limit hit before any solution was found
  kError,       ///< the solver gave up (numerical trouble); `message` says what it said
};
/** "optimal", "feasible", "infeasible", "unbounded", "no_solution", "error". */
[[nodiscard]] const char* to_string(MilpStatus status);
/** True for kOptimal and kFeasible: `values` holds a solution. */
[[nodiscard]] inline bool has_solution(MilpStatus status) {
  return status == MilpStatus::kOptimal || status == MilpStatus::kFeasible;
}

struct MilpResult {
  MilpStatus status = MilpStatus::kNoSolution;
  double objective = kMilpInfinity;    ///< of `values` (incl. offset); +inf without a solution
  double best_bound = -kMilpInfinity;  ///< proven lower bound on the optimum (incl. offset)
  /** (objective − best_bound) / max(|objective|, 1e-10), ≥ 0; +inf without a solution. */
  double relative_gap = kMilpInfinity;
  std::vector<double> values;  ///< one per variable when has_solution(status), else empty
  double wall_seconds = 0.0;
  std::int64_t nodes = 0;  ///< branch-and-bound nodes explored
  /** NaN without a warm start, else its objective value (whether or not it was accepted). */
  double warm_start_objective = std::numeric_limits<double>::quiet_NaN();
  /** "" (none given), "accepted", or "rejected: <check_solution's line>". */
  std::string warm_start;
  /** A note from the solver (e.g. why it gave up, or a solution check that failed); often "". */
  std::string message;
};

}  // namespace embshard
