// RecShard's MILP (recshard_milp.h): validation, the formulation, the greedy warm start, decoding.
#include "embshard/milp/recshard_milp.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_set>
#include <utility>

#include "embshard/core/error.h"

namespace embshard {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
/** Guards the int64 byte products: 2^50 bytes (1 PiB) per table is far beyond any real table. */
constexpr std::int64_t kMaxTableBytes = std::int64_t{1} << 50;

std::string table_label(const RecShardInput& input, std::size_t j) {
  return detail::concat("table ", j, " '", input.tables[j].name, "'");
}

/** Bytes a lookup reads: the row's weights. */
std::int64_t weight_row_bytes(const RecShardTable& t) { return static_cast<std::int64_t>(t.dim) * t.bytes_per_element; }

/** Bytes a row occupies: its weights and its optimizer state. */
std::int64_t row_bytes(const RecShardTable& t) { return weight_row_bytes(t) + t.state_bytes_per_row; }

int steps_of(const RecShardTable& t) { return static_cast<int>(t.icdf.size()) - 1; }

/** Model rhs of a capacity row: Cap − 0.5 byte (exact for integer byte counts), in MiB. */
double capacity_rhs_mib(std::int64_t cap_bytes) {
  return (cap_bytes > 0 ? static_cast<double>(cap_bytes) - 0.5 : 0.0) / kMiB;
}

/** Classes of identical GPUs (equal capacities), each in input order. */
std::vector<std::vector<int>> gpu_classes(const RecShardInput& input) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<int>> by_caps;
  std::vector<std::pair<std::int64_t, std::int64_t>> order;
  for (int m = 0; m < static_cast<int>(input.gpus.size()); ++m) {
    const auto key = std::make_pair(input.gpus[static_cast<std::size_t>(m)].hbm_bytes,
                                    input.gpus[static_cast<std::size_t>(m)].host_bytes);
    auto& members = by_caps[key];
    if (members.empty()) order.push_back(key);
    members.push_back(m);
  }
  std::vector<std::vector<int>> classes;
  for (const auto& key : order) classes.push_back(by_caps[key]);
  return classes;
}

void check_input(const RecShardInput& input) {
  const std::string error = find_error_in_recshard_input(input);
  EMBSHARD_CHECK(error.empty(), "RecShard input: ", error);
}

}  // namespace

const char* to_string(RecShardSymmetry symmetry) {
  switch (symmetry) {
    case RecShardSymmetry::kNone: return "none";
    case RecShardSymmetry::kOrderedLoads: return "ordered_loads";
    case RecShardSymmetry::kTableIndex: return "table_index";
  }
  return "?";
}

std::int64_t recshard_hbm_rows(const RecShardTable& table, int step) {
  EMBSHARD_CHECK(step >= 0 && step <= steps_of(table), "table '", table.name, "': step ", step, " is outside 0..",
                 steps_of(table));
  const double v = table.icdf[static_cast<std::size_t>(step)] * static_cast<double>(table.rows);
  const double nearest = std::round(v);
  const double rows = std::abs(v - nearest) <= 1e-6 ? nearest : std::ceil(v);
  return std::clamp(static_cast<std::int64_t>(rows), std::int64_t{0}, table.rows);
}

double recshard_table_cost_ms(const RecShardInput& input, int table, int step) {
  const RecShardTable& t = input.tables.at(static_cast<std::size_t>(table));
  EMBSHARD_CHECK(step >= 0 && step <= steps_of(t), "table '", t.name, "': step ", step, " is outside 0..", steps_of(t));
  const double pct = static_cast<double>(step) / steps_of(t);
  const double demand = t.pooling * static_cast<double>(weight_row_bytes(t)) * static_cast<double>(input.batch_size);
  return 1e3 * demand * (pct / input.hbm_bytes_per_s + (1.0 - pct) / input.uvm_bytes_per_s);
}

std::string find_error_in_recshard_input(const RecShardInput& input) {
  if (input.tables.empty()) return "no tables";
  if (input.gpus.empty()) return "no GPUs";
  if (!(std::isfinite(input.hbm_bytes_per_s) && input.hbm_bytes_per_s > 0.0)) {
    return detail::concat("hbm_bytes_per_s must be positive and finite (got ", input.hbm_bytes_per_s, ")");
  }
  if (!(std::isfinite(input.uvm_bytes_per_s) && input.uvm_bytes_per_s > 0.0)) {
    return detail::concat("uvm_bytes_per_s must be positive and finite (got ", input.uvm_bytes_per_s, ")");
  }
  if (input.batch_size <= 0) {
    return detail::concat("batch_size must be positive (got ", input.batch_size, ")");
  }
  for (std::size_t m = 0; m < input.gpus.size(); ++m) {
    if (input.gpus[m].hbm_bytes < 0) {
      return detail::concat("gpu ", m, ": hbm_bytes is negative (", input.gpus[m].hbm_bytes, ")");
    }
    if (input.gpus[m].host_bytes < 0) {
      return detail::concat("gpu ", m, ": host_bytes is negative (", input.gpus[m].host_bytes, ")");
    }
  }
  std::unordered_set<std::string> names;
  for (std::size_t j = 0; j < input.tables.size(); ++j) {
    const RecShardTable& t = input.tables[j];
    const std::string where = table_label(input, j);
    if (t.name.empty()) return detail::concat("table ", j, " has an empty name");
    if (!names.insert(t.name).second) return detail::concat(where, ": duplicate table name");
    if (t.rows <= 0) return detail::concat(where, ": rows must be positive (got ", t.rows, ")");
    if (t.dim <= 0) return detail::concat(where, ": dim must be positive (got ", t.dim, ")");
    if (t.bytes_per_element <= 0 || t.bytes_per_element > 16) {
      return detail::concat(where, ": bytes_per_element must be in 1..16 (got ", t.bytes_per_element, ")");
    }
    if (t.rows > kMaxTableBytes / row_bytes(t)) {
      return detail::concat(where, ": ", t.rows, " rows of ", row_bytes(t), " bytes exceed 2^50 bytes");
    }
    if (!(std::isfinite(t.pooling) && t.pooling >= 0.0)) {
      return detail::concat(where, ": pooling must be >= 0 and finite (got ", t.pooling, ")");
    }
    if (!(t.coverage >= 0.0 && t.coverage <= 1.0)) {
      return detail::concat(where, ": coverage must be in [0, 1] (got ", t.coverage, ")");
    }
    if (t.icdf.size() < 2) {
      return detail::concat(where, ": icdf needs at least 2 points (0% and 100% of the accesses), got ", t.icdf.size());
    }
    for (std::size_t i = 0; i < t.icdf.size(); ++i) {
      const double v = t.icdf[i];
      if (!(v >= 0.0 && v <= 1.0)) {
        return detail::concat(where, ": icdf step ", i, " is ", v, ", not a share of rows in [0, 1]");
      }
      if (i > 0 && v < t.icdf[i - 1]) {
        return detail::concat(where, ": icdf is not monotone: step ", i, " (", v, ") is below step ", i - 1, " (",
                              t.icdf[i - 1], ")");
      }
    }
  }
  // Every table must fit alone on some GPU at some split.
  std::int64_t largest_total = 0;
  for (const RecShardGpu& g : input.gpus) largest_total = std::max(largest_total, g.hbm_bytes + g.host_bytes);
  for (std::size_t j = 0; j < input.tables.size(); ++j) {
    const RecShardTable& t = input.tables[j];
    const std::int64_t rb = row_bytes(t);
    bool fits = false;
    for (int i = 0; i <= steps_of(t) && !fits; ++i) {
      const std::int64_t hbm = recshard_hbm_rows(t, i) * rb;
      const std::int64_t host = t.rows * rb - hbm;
      for (const RecShardGpu& g : input.gpus) {
        if (hbm <= g.hbm_bytes && host <= g.host_bytes) {
          fits = true;
          break;
        }
      }
    }
    if (!fits) {
      return detail::concat(table_label(input, j), " (", t.rows * rb,
                            " bytes) fits on no GPU at any split, even using host memory "
                            "(the largest HBM + host of a GPU is ",
                            largest_total, " bytes)");
    }
  }
  return "";
}

RecShardSolution evaluate_recshard(const RecShardInput& input, const std::vector<RecShardChoice>& choices) {
  check_input(input);
  EMBSHARD_CHECK(choices.size() == input.tables.size(), "RecShard: ", choices.size(), " choices for ",
                 input.tables.size(), " tables");
  RecShardSolution s;
  s.gpus.assign(input.gpus.size(), {});
  for (std::size_t j = 0; j < choices.size(); ++j) {
    const RecShardTable& t = input.tables[j];
    const RecShardChoice& c = choices[j];
    EMBSHARD_CHECK(c.gpu >= 0 && c.gpu < static_cast<int>(input.gpus.size()), table_label(input, j), ": gpu ", c.gpu,
                   " is outside 0..", input.gpus.size() - 1);
    EMBSHARD_CHECK(c.step >= 0 && c.step <= steps_of(t), table_label(input, j), ": step ", c.step, " is outside 0..",
                   steps_of(t));
    RecShardTablePlacement p;
    p.gpu = c.gpu;
    p.step = c.step;
    p.hbm_rows = recshard_hbm_rows(t, c.step);
    p.hbm_bytes = p.hbm_rows * row_bytes(t);
    p.host_bytes = t.rows * row_bytes(t) - p.hbm_bytes;
    p.hbm_access_share = static_cast<double>(c.step) / steps_of(t);
    p.cost_ms = recshard_table_cost_ms(input, static_cast<int>(j), c.step);
    p.weighted_cost_ms = t.coverage * p.cost_ms;
    RecShardGpuLoad& g = s.gpus[static_cast<std::size_t>(c.gpu)];
    g.cost_ms += p.weighted_cost_ms;
    g.hbm_bytes += p.hbm_bytes;
    g.host_bytes += p.host_bytes;
    s.tables.push_back(p);
  }
  for (std::size_t m = 0; m < s.gpus.size(); ++m) {
    s.max_cost_ms = std::max(s.max_cost_ms, s.gpus[m].cost_ms);
    if (s.capacity_error.empty() && s.gpus[m].hbm_bytes > input.gpus[m].hbm_bytes) {
      s.capacity_error = detail::concat("gpu ", m, ": HBM use ", s.gpus[m].hbm_bytes, " bytes exceeds hbm_bytes ",
                                        input.gpus[m].hbm_bytes);
    }
    if (s.capacity_error.empty() && s.gpus[m].host_bytes > input.gpus[m].host_bytes) {
      s.capacity_error = detail::concat("gpu ", m, ": host memory use ", s.gpus[m].host_bytes,
                                        " bytes exceeds host_bytes ", input.gpus[m].host_bytes);
    }
  }
  return s;
}

std::optional<std::vector<RecShardChoice>> recshard_greedy(const RecShardInput& input) {
  check_input(input);
  const std::size_t num_tables = input.tables.size();
  const std::size_t num_gpus = input.gpus.size();
  std::vector<std::size_t> order(num_tables);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<double> all_uvm(num_tables);
  for (std::size_t j = 0; j < num_tables; ++j) {
    all_uvm[j] = input.tables[j].coverage * recshard_table_cost_ms(input, static_cast<int>(j), 0);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return all_uvm[a] > all_uvm[b]; });

  std::vector<double> load(num_gpus, 0.0);
  std::vector<std::int64_t> hbm_free(num_gpus), host_free(num_gpus);
  for (std::size_t m = 0; m < num_gpus; ++m) {
    hbm_free[m] = input.gpus[m].hbm_bytes;
    host_free[m] = input.gpus[m].host_bytes;
  }
  std::vector<RecShardChoice> choices(num_tables);
  for (const std::size_t j : order) {
    const RecShardTable& t = input.tables[j];
    const std::int64_t rb = row_bytes(t);
    const std::int64_t total = t.rows * rb;
    int best_gpu = -1, best_step = -1;
    double best_load = std::numeric_limits<double>::infinity();
    std::int64_t best_hbm = 0;
    for (std::size_t m = 0; m < num_gpus; ++m) {
      for (int i = 0; i <= steps_of(t); ++i) {
        const std::int64_t hbm = recshard_hbm_rows(t, i) * rb;
        if (hbm > hbm_free[m] || total - hbm > host_free[m]) continue;
        const double new_load = load[m] + t.coverage * recshard_table_cost_ms(input, static_cast<int>(j), i);
        if (new_load < best_load || (new_load == best_load && hbm < best_hbm)) {
          best_load = new_load;
          best_gpu = static_cast<int>(m);
          best_step = i;
          best_hbm = hbm;
        }
      }
    }
    if (best_gpu < 0) return std::nullopt;
    const auto m = static_cast<std::size_t>(best_gpu);
    load[m] = best_load;
    hbm_free[m] -= best_hbm;
    host_free[m] -= total - best_hbm;
    choices[j] = {best_gpu, best_step};
  }
  return choices;
}

std::vector<RecShardChoice> recshard_canonical(const RecShardInput& input, std::vector<RecShardChoice> choices,
                                               RecShardSymmetry symmetry) {
  if (symmetry == RecShardSymmetry::kNone) return choices;
  const RecShardSolution eval = evaluate_recshard(input, choices);
  std::vector<int> relabel(input.gpus.size());
  std::iota(relabel.begin(), relabel.end(), 0);
  for (const std::vector<int>& members : gpu_classes(input)) {
    std::vector<int> sorted = members;
    if (symmetry == RecShardSymmetry::kOrderedLoads) {
      std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
        return eval.gpus[static_cast<std::size_t>(a)].cost_ms > eval.gpus[static_cast<std::size_t>(b)].cost_ms;
      });
    } else {
      std::vector<std::size_t> first(input.gpus.size(), std::numeric_limits<std::size_t>::max());
      for (std::size_t j = choices.size(); j-- > 0;) first[static_cast<std::size_t>(choices[j].gpu)] = j;
      std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
        return first[static_cast<std::size_t>(a)] < first[static_cast<std::size_t>(b)];
      });
    }
    // The r-th GPU of the sorted order becomes the r-th member of the class.
    for (std::size_t r = 0; r < members.size(); ++r) relabel[static_cast<std::size_t>(sorted[r])] = members[r];
  }
  for (RecShardChoice& c : choices) c.gpu = relabel[static_cast<std::size_t>(c.gpu)];
  return choices;
}

double recshard_milp_variables(const RecShardInput& input) {
  double steps = 0.0;
  for (const RecShardTable& t : input.tables) steps += steps_of(t) + 1;
  const auto tables = static_cast<double>(input.tables.size()), gpus = static_cast<double>(input.gpus.size());
  return 3.0 * tables * gpus + steps + 3.0 * tables + gpus + 1.0;
}

RecShardMilp build_recshard_milp(const RecShardInput& input, const RecShardOptions& options,
                                 const std::function<bool()>& stop) {
  check_input(input);
  RecShardMilp r;
  r.symmetry = options.symmetry;
  MilpModel& model = r.model;
  const std::size_t num_tables = input.tables.size();
  const std::size_t num_gpus = input.gpus.size();
  const double inv_uvm = 1e3 / input.uvm_bytes_per_s;  // ms per byte
  const double inv_hbm = 1e3 / input.hbm_bytes_per_s;

  r.p.assign(num_tables, {});
  r.x.assign(num_tables, {});
  r.hbm.assign(num_tables, {});
  r.hot.assign(num_tables, {});
  // Variables.
  r.max_cost = model.add_continuous("C", 0.0, kMilpInfinity, 1.0);
  for (std::size_t m = 0; m < num_gpus; ++m) {
    r.gpu_cost.push_back(model.add_continuous(detail::concat("c_gpu", m), 0.0, kMilpInfinity));
  }
  const auto stopped = [&] {
    r.complete = !stop();
    return !r.complete;
  };
  for (std::size_t j = 0; j < num_tables; ++j) {
    if (stopped()) return r;
    const RecShardTable& t = input.tables[j];
    const int steps = steps_of(t);
    const double rb_mib = static_cast<double>(row_bytes(t)) / kMiB;
    const double mem_lo = static_cast<double>(recshard_hbm_rows(t, 0)) * rb_mib;
    const double mem_hi = static_cast<double>(recshard_hbm_rows(t, steps)) * rb_mib;
    for (std::size_t m = 0; m < num_gpus; ++m) {
      r.p[j].push_back(model.add_binary(detail::concat("p_t", j, "_g", m)));
    }
    for (int i = 0; i <= steps; ++i) r.x[j].push_back(model.add_binary(detail::concat("x_t", j, "_s", i)));
    r.mem.push_back(model.add_continuous(detail::concat("mem_t", j), mem_lo, mem_hi));
    r.pct.push_back(model.add_continuous(detail::concat("pct_t", j), 0.0, 1.0));
    r.table_cost.push_back(model.add_continuous(detail::concat("c_t", j), 0.0, kMilpInfinity));
    for (std::size_t m = 0; m < num_gpus; ++m) {
      r.hbm[j].push_back(model.add_continuous(detail::concat("hbm_t", j, "_g", m), 0.0, mem_hi));
      r.hot[j].push_back(model.add_continuous(detail::concat("hot_t", j, "_g", m), 0.0, 1.0));
    }
  }

  // Per-table rows: (2), (4), (5), (6), (11), (L1), (L2) and the (L1)/(L2) upper bounds.
  for (std::size_t j = 0; j < num_tables; ++j) {
    if (stopped()) return r;
    const RecShardTable& t = input.tables[j];
    const int steps = steps_of(t);
    const double rb_mib = static_cast<double>(row_bytes(t)) / kMiB;
    const double mem_hi = static_cast<double>(recshard_hbm_rows(t, steps)) * rb_mib;
    std::vector<MilpTerm> terms;
    for (std::size_t m = 0; m < num_gpus; ++m) terms.push_back({r.p[j][m], 1.0});
    model.add_constraint(detail::concat("c2_t", j), terms, MilpSense::kEqual, 1.0);

    terms.clear();
    for (int i = 0; i <= steps; ++i) {
      terms.push_back({r.x[j][static_cast<std::size_t>(i)], static_cast<double>(recshard_hbm_rows(t, i)) * rb_mib});
    }
    terms.push_back({r.mem[j], -1.0});
    model.add_constraint(detail::concat("c4_t", j), terms, MilpSense::kEqual, 0.0);

    terms.clear();
    for (int i = 1; i <= steps; ++i) {
      terms.push_back({r.x[j][static_cast<std::size_t>(i)], static_cast<double>(i) / steps});
    }
    terms.push_back({r.pct[j], -1.0});
    model.add_constraint(detail::concat("c5_t", j), terms, MilpSense::kEqual, 0.0);

    terms.clear();
    for (int i = 0; i <= steps; ++i) terms.push_back({r.x[j][static_cast<std::size_t>(i)], 1.0});
    model.add_constraint(detail::concat("c6_t", j), terms, MilpSense::kEqual, 1.0);

    // (11): c_j − L_j (1/BW_HBM − 1/BW_UVM) pct_j = L_j / BW_UVM
    const double demand = t.pooling * static_cast<double>(weight_row_bytes(t)) * static_cast<double>(input.batch_size);
    model.add_constraint(detail::concat("c11_t", j),
                         {{r.table_cost[j], 1.0}, {r.pct[j], -demand * (inv_hbm - inv_uvm)}}, MilpSense::kEqual,
                         demand * inv_uvm);

    terms.clear();
    for (std::size_t m = 0; m < num_gpus; ++m) terms.push_back({r.hbm[j][m], 1.0});
    terms.push_back({r.mem[j], -1.0});
    model.add_constraint(detail::concat("L1_t", j), terms, MilpSense::kEqual, 0.0);
    terms.clear();
    for (std::size_t m = 0; m < num_gpus; ++m) terms.push_back({r.hot[j][m], 1.0});
    terms.push_back({r.pct[j], -1.0});
    model.add_constraint(detail::concat("L2_t", j), terms, MilpSense::kEqual, 0.0);
    for (std::size_t m = 0; m < num_gpus; ++m) {
      model.add_constraint(detail::concat("L1ub_t", j, "_g", m), {{r.hbm[j][m], 1.0}, {r.p[j][m], -mem_hi}},
                           MilpSense::kLessEqual, 0.0);
      model.add_constraint(detail::concat("L2ub_t", j, "_g", m), {{r.hot[j][m], 1.0}, {r.p[j][m], -1.0}},
                           MilpSense::kLessEqual, 0.0);
    }
  }

  // Per-GPU rows: (1), (9), (10), (12).
  for (std::size_t m = 0; m < num_gpus; ++m) {
    if (stopped()) return r;
    model.add_constraint(detail::concat("c1_g", m), {{r.gpu_cost[m], 1.0}, {r.max_cost, -1.0}}, MilpSense::kLessEqual,
                         0.0);
    std::vector<MilpTerm> hbm_terms, host_terms, cost_terms;
    for (std::size_t j = 0; j < num_tables; ++j) {
      const RecShardTable& t = input.tables[j];
      const double emb_mib = static_cast<double>(t.rows * row_bytes(t)) / kMiB;
      hbm_terms.push_back({r.hbm[j][m], 1.0});
      host_terms.push_back({r.p[j][m], emb_mib});
      host_terms.push_back({r.hbm[j][m], -1.0});
      const double demand =
          t.coverage * t.pooling * static_cast<double>(row_bytes(t)) * static_cast<double>(input.batch_size);
      cost_terms.push_back({r.p[j][m], -demand * inv_uvm});
      cost_terms.push_back({r.hot[j][m], -demand * (inv_hbm - inv_uvm)});
    }
    cost_terms.push_back({r.gpu_cost[m], 1.0});
    model.add_constraint(detail::concat("c9_g", m), hbm_terms, MilpSense::kLessEqual,
                         capacity_rhs_mib(input.gpus[m].hbm_bytes));
    model.add_constraint(detail::concat("c10_g", m), host_terms, MilpSense::kLessEqual,
                         capacity_rhs_mib(input.gpus[m].host_bytes));
    model.add_constraint(detail::concat("c12_g", m), cost_terms, MilpSense::kEqual, 0.0);
  }

  // Symmetry breaking between identical GPUs.
  for (const std::vector<int>& members : gpu_classes(input)) {
    for (std::size_t rnk = 0; rnk < members.size(); ++rnk) {
      const auto g = static_cast<std::size_t>(members[rnk]);
      if (options.symmetry == RecShardSymmetry::kOrderedLoads && rnk + 1 < members.size()) {
        const auto next = static_cast<std::size_t>(members[rnk + 1]);
        model.add_constraint(detail::concat("sym_g", g, "_g", next), {{r.gpu_cost[g], 1.0}, {r.gpu_cost[next], -1.0}},
                             MilpSense::kGreaterEqual, 0.0);
      }
      if (options.symmetry == RecShardSymmetry::kTableIndex) {
        for (std::size_t j = 0; j < std::min(rnk, num_tables); ++j) {
          model.variables[static_cast<std::size_t>(r.p[j][g])].upper = 0.0;  // r > j
        }
      }
    }
  }

  if (options.warm_start) {
    if (auto greedy = recshard_greedy(input)) {
      r.warm_start = recshard_canonical(input, *greedy, options.symmetry);
      model.initial_solution = recshard_encode(input, r, *r.warm_start);
    }
  }
  return r;
}

std::vector<double> recshard_encode(const RecShardInput& input, const RecShardMilp& milp,
                                    const std::vector<RecShardChoice>& choices) {
  const RecShardSolution s = evaluate_recshard(input, choices);
  std::vector<double> v(static_cast<std::size_t>(milp.model.num_variables()), 0.0);
  auto set = [&v](int var, double value) { v[static_cast<std::size_t>(var)] = value; };
  for (std::size_t j = 0; j < choices.size(); ++j) {
    const RecShardTablePlacement& p = s.tables[j];
    const double mem_mib = static_cast<double>(p.hbm_bytes) / kMiB;
    const auto m = static_cast<std::size_t>(p.gpu);
    set(milp.p[j][m], 1.0);
    set(milp.x[j][static_cast<std::size_t>(p.step)], 1.0);
    set(milp.mem[j], mem_mib);
    set(milp.pct[j], p.hbm_access_share);
    set(milp.table_cost[j], p.cost_ms);
    set(milp.hbm[j][m], mem_mib);
    set(milp.hot[j][m], p.hbm_access_share);
  }
  for (std::size_t m = 0; m < s.gpus.size(); ++m) set(milp.gpu_cost[m], s.gpus[m].cost_ms);
  set(milp.max_cost, s.max_cost_ms);
  return v;
}

std::vector<RecShardChoice> recshard_decode(const RecShardMilp& milp, const std::vector<double>& values) {
  EMBSHARD_ASSERT(values.size() == static_cast<std::size_t>(milp.model.num_variables()));
  auto argmax = [&values](const std::vector<int>& vars) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < vars.size(); ++k) {
      if (values[static_cast<std::size_t>(vars[k])] > values[static_cast<std::size_t>(vars[best])]) best = k;
    }
    return static_cast<int>(best);
  };
  std::vector<RecShardChoice> choices(milp.p.size());
  for (std::size_t j = 0; j < milp.p.size(); ++j) choices[j] = {argmax(milp.p[j]), argmax(milp.x[j])};
  return choices;
}

RecShardResult solve_recshard(const RecShardInput& input, const RecShardOptions& options, CbcOptions cbc,
                              std::optional<std::chrono::steady_clock::time_point> deadline) {
  const auto stop = [&] { return deadline && std::chrono::steady_clock::now() >= *deadline; };
  const RecShardMilp milp = build_recshard_milp(input, options, stop);
  RecShardResult result;
  if (!milp.complete) {
    result.built = false;
    result.milp.status = MilpStatus::kNoSolution;
    result.milp.message = "the model was not built before the deadline";
    if (auto greedy = recshard_greedy(input)) result.warm_start = evaluate_recshard(input, *greedy);
    return result;
  }
  if (deadline) {
    const double left = std::chrono::duration<double>(*deadline - std::chrono::steady_clock::now()).count();
    cbc.time_limit_s = std::min(cbc.time_limit_s, std::max(left, 0.01));
  }
  result.num_variables = milp.model.num_variables();
  result.num_constraints = milp.model.num_constraints();
  if (milp.warm_start) result.warm_start = evaluate_recshard(input, *milp.warm_start);
  result.milp = solve_with_cbc(milp.model, cbc);
  if (has_solution(result.milp.status)) {
    result.solution = evaluate_recshard(input, recshard_decode(milp, result.milp.values));
  }
  return result;
}

}  // namespace embshard
