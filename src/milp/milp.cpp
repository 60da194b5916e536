#include "embshard/milp/milp.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_set>

#include "embshard/core/error.h"

namespace embshard {

const char* to_string(MilpVarType type) {
  switch (type) {
    case MilpVarType::kContinuous: return "continuous";
    case MilpVarType::kInteger: return "integer";
    case MilpVarType::kBinary: return "binary";
  }
  return "?";
}

const char* to_string(MilpSense sense) {
  switch (sense) {
    case MilpSense::kLessEqual: return "<=";
    case MilpSense::kGreaterEqual: return ">=";
    case MilpSense::kEqual: return "==";
  }
  return "?";
}

const char* to_string(MilpStatus status) {
  switch (status) {
    case MilpStatus::kOptimal: return "optimal";
    case MilpStatus::kFeasible: return "feasible";
    case MilpStatus::kInfeasible: return "infeasible";
    case MilpStatus::kUnbounded: return "unbounded";
    case MilpStatus::kNoSolution: return "no_solution";
    case MilpStatus::kError: return "error";
  }
  return "?";
}

int MilpModel::add_variable(std::string name, MilpVarType type, double lower, double upper, double objective) {
  variables.push_back({std::move(name), type, lower, upper, objective});
  return static_cast<int>(variables.size()) - 1;
}

int MilpModel::add_constraint(std::string name, std::vector<MilpTerm> terms, MilpSense sense, double rhs) {
  constraints.push_back({std::move(name), std::move(terms), sense, rhs});
  return static_cast<int>(constraints.size()) - 1;
}

double MilpModel::objective_value(const std::vector<double>& values) const {
  EMBSHARD_ASSERT(values.size() == variables.size());
  double sum = objective_offset;
  for (std::size_t j = 0; j < variables.size(); ++j) sum += variables[j].objective * values[j];
  return sum;
}

namespace {

std::string describe_var(const MilpModel& model, int j) {
  return detail::concat("variable ", j, " '", model.variables[static_cast<std::size_t>(j)].name, "'");
}

std::string describe_row(const MilpModel& model, int r) {
  return detail::concat("constraint ", r, " '", model.constraints[static_cast<std::size_t>(r)].name, "'");
}

}  // namespace

std::string find_error_in_model(const MilpModel& model) {
  const int n = model.num_variables();
  if (!std::isfinite(model.objective_offset)) {
    return detail::concat("objective_offset is not finite (", model.objective_offset, ")");
  }
  std::unordered_set<std::string> names;
  for (int j = 0; j < n; ++j) {
    const MilpVariable& v = model.variables[static_cast<std::size_t>(j)];
    if (v.name.empty()) return detail::concat("variable ", j, " has an empty name");
    if (!names.insert(v.name).second) {
      return detail::concat(describe_var(model, j), ": duplicate variable name");
    }
    if (std::isnan(v.lower) || std::isnan(v.upper)) {
      return detail::concat(describe_var(model, j), ": bound is NaN");
    }
    if (v.lower == kMilpInfinity || v.upper == -kMilpInfinity) {
      return detail::concat(describe_var(model, j), ": bounds [", v.lower, ", ", v.upper, "] leave no finite value");
    }
    if (v.lower > v.upper) {
      return detail::concat(describe_var(model, j), ": lower bound ", v.lower, " is above upper bound ", v.upper);
    }
    if (v.type == MilpVarType::kBinary && (v.lower < 0.0 || v.upper > 1.0)) {
      return detail::concat(describe_var(model, j), ": binary bounds [", v.lower, ", ", v.upper,
                            "] are not within [0, 1]");
    }
    if (!std::isfinite(v.objective)) {
      return detail::concat(describe_var(model, j), ": objective coefficient is not finite (", v.objective, ")");
    }
  }
  names.clear();
  std::vector<int> seen_in_row(static_cast<std::size_t>(n), -1);
  for (int r = 0; r < model.num_constraints(); ++r) {
    const MilpConstraint& c = model.constraints[static_cast<std::size_t>(r)];
    if (c.name.empty()) return detail::concat("constraint ", r, " has an empty name");
    if (!names.insert(c.name).second) {
      return detail::concat(describe_row(model, r), ": duplicate constraint name");
    }
    if (!std::isfinite(c.rhs)) {
      return detail::concat(describe_row(model, r), ": rhs is not finite (", c.rhs, ")");
    }
    for (std::size_t k = 0; k < c.terms.size(); ++k) {
      const MilpTerm& t = c.terms[k];
      if (t.var < 0 || t.var >= n) {
        return detail::concat(describe_row(model, r), ": term ", k, " names variable ", t.var, ", outside 0..", n - 1);
      }
      if (!std::isfinite(t.coef)) {
        return detail::concat(describe_row(model, r), ": coefficient of ", describe_var(model, t.var),
                              " is not finite (", t.coef, ")");
      }
      int& seen = seen_in_row[static_cast<std::size_t>(t.var)];
      if (seen == r) {
        return detail::concat(describe_row(model, r), ": ", describe_var(model, t.var), " appears twice");
      }
      seen = r;
    }
  }
  if (!model.initial_solution.empty()) {
    if (model.initial_solution.size() != model.variables.size()) {
      return detail::concat("initial_solution has ", model.initial_solution.size(), " values for ", n, " variables");
    }
    for (int j = 0; j < n; ++j) {
      if (!std::isfinite(model.initial_solution[static_cast<std::size_t>(j)])) {
        return detail::concat("initial_solution: value of ", describe_var(model, j), " is not finite");
      }
    }
  }
  return "";
}

std::string check_solution(const MilpModel& model, const std::vector<double>& values, double tol) {
  if (values.size() != model.variables.size()) {
    return detail::concat("solution has ", values.size(), " values for ", model.variables.size(), " variables");
  }
  for (int j = 0; j < model.num_variables(); ++j) {
    const MilpVariable& v = model.variables[static_cast<std::size_t>(j)];
    const double x = values[static_cast<std::size_t>(j)];
    if (!std::isfinite(x)) return detail::concat(describe_var(model, j), " = ", x, " is not finite");
    if (x < v.lower - tol || x > v.upper + tol) {
      return detail::concat(describe_var(model, j), " = ", x, " is outside its bounds [", v.lower, ", ", v.upper, "]");
    }
    if (v.type != MilpVarType::kContinuous && std::abs(x - std::round(x)) > tol) {
      return detail::concat(describe_var(model, j), " = ", x, " is not integral");
    }
  }
  for (int r = 0; r < model.num_constraints(); ++r) {
    const MilpConstraint& c = model.constraints[static_cast<std::size_t>(r)];
    double activity = 0.0;
    for (const MilpTerm& t : c.terms) activity += t.coef * values[static_cast<std::size_t>(t.var)];
    const double slack = tol * std::max(1.0, std::abs(c.rhs));
    bool ok = true;
    switch (c.sense) {
      case MilpSense::kLessEqual: ok = activity <= c.rhs + slack; break;
      case MilpSense::kGreaterEqual: ok = activity >= c.rhs - slack; break;
      case MilpSense::kEqual: ok = std::abs(activity - c.rhs) <= slack; break;
    }
    if (!ok) {
      std::ostringstream out;
      out.precision(12);
      out << describe_row(model, r) << " is violated: activity " << activity << ' ' << to_string(c.sense) << ' '
          << c.rhs << " does not hold";
      return out.str();
    }
  }
  return "";
}

}  // namespace embshard
