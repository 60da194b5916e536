#include "embshard/eval/what_if.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"

namespace embshard {
namespace {

constexpr std::int64_t kMemoryStep = std::int64_t{1} << 26;  // 1/16 GiB
constexpr int kMostAllPlanned = 16;                          // counts planned without a grid

std::string gib(double bytes) { return gib_text(bytes, 6); }

std::string ms(double value) {
  char text[40];
  if (std::abs(value) < 1e6)
    std::snprintf(text, sizeof text, "%.3f ms", value);
  else
    std::snprintf(text, sizeof text, "%.4g ms", value);  // a target no count could meet
  return text;
}

/** `task` planned by the options' sharder and judged (one compare row); compare's own progress
 *  lines are left out (many tasks are planned one at a time), its warnings kept. */
CompareRow plan_changed(const Task& task, const WhatIfOptions& options, const Context& ctx) {
  CompareOptions compare;
  compare.sharders = {options.sharder};
  compare.cost = options.cost;
  compare.judge = options.judge;
  Context quiet = ctx;
  quiet.progress = {};
  quiet.verbosity = std::max(ctx.verbosity, LogLevel::kWarning);
  return run_compare({task}, compare, quiet).front();
}

bool planned(const CompareRow& row) { return row.ok(); }

/** What a failed run says, in one line. */
std::string failure(const CompareRow& row) { return row.status + " (" + one_line(row.reason) + ")"; }

// ---- capacity ----

/** The counts to plan first: all of them up to kMostAllPlanned, else ~doubling plus both ends. */
std::vector<int> grid_of(const std::vector<int>& counts) {
  if (static_cast<int>(counts.size()) <= kMostAllPlanned) return counts;
  std::vector<int> grid{counts.front()};
  for (int c : counts) {
    if (c >= 2 * grid.back()) grid.push_back(c);
  }
  if (grid.back() != counts.back()) grid.push_back(counts.back());
  return grid;
}

CapacityPoint capacity_point(const Task& task, int devices, const WhatIfOptions& options, const Context& ctx) {
  Task changed = task;
  changed.topology = topology_with_devices(task.topology, devices);
  CapacityPoint p;
  p.devices = devices;
  p.hosts = changed.topology.num_hosts();
  // A task the count makes invalid (a separate group larger than the devices) is a point too.
  if (std::string why = find_error_in_task(changed, "the task"); !why.empty()) {
    p.run.status = "invalid";
    p.run.reason = why;
    return p;
  }
  try {
    p.run = plan_changed(changed, options, ctx);
  } catch (const Error& e) {  // the sharder's options the count makes invalid (2D groups it does not divide)
    p.run.status = "invalid";
    p.run.reason = e.what();
    return p;
  }
  if (p.run.lower_bound_ms > 0) {  // compare's bound, where the sharder's model is the judge
    p.bound_ms = p.run.lower_bound_ms;
  } else {  // the judge's own bound, where it has one (a measured judge has none)
    p.bound_ms = make_judge(changed, options.judge, ctx)->lower_bound(changed, Objective::kStep).value_or(0.0);
  }
  return p;
}

std::string capacity_verdict(const CapacityCurve& c) {
  std::ostringstream v;
  if (c.target_ms <= 0) {
    v << c.points.size() << " device counts planned between " << c.min_devices << " and " << c.max_devices;
    return v.str();
  }
  if (c.fewest > 0) {
    const auto at =
        std::find_if(c.points.begin(), c.points.end(), [&](const CapacityPoint& p) { return p.devices == c.fewest; });
    v << c.fewest << " devices (" << at->hosts << (at->hosts == 1 ? " host" : " hosts") << ") meet " << ms(c.target_ms)
      << ": step " << ms(at->run.eval.step_ms);
    if (at != c.points.begin()) {
      const CapacityPoint& below = *(at - 1);
      v << "; " << below.devices
        << " devices: " << (planned(below.run) ? "step " + ms(below.run.eval.step_ms) : failure(below.run));
    } else {
      v << " (the smallest count asked for)";
    }
    return v.str();
  }
  const CapacityPoint* fastest = nullptr;
  double least_bound = std::numeric_limits<double>::infinity();
  for (const CapacityPoint& p : c.points) {
    if (planned(p.run) && (!fastest || p.run.eval.step_ms < fastest->run.eval.step_ms)) fastest = &p;
    least_bound = std::min(least_bound, p.bound_ms > 0 ? p.bound_ms : 0.0);
  }
  v << "no device count tried between " << c.min_devices << " and " << c.max_devices << " meets " << ms(c.target_ms);
  if (fastest)
    v << ": the fastest is " << ms(fastest->run.eval.step_ms) << " at " << fastest->devices << " devices";
  else
    v << ": the task fits at none of them (" << failure(c.points.back().run) << ")";
  if (least_bound > c.target_ms)
    v << "; the judge's lower bound is at least " << ms(least_bound) << " at every count tried, so no plan there can";
  return v.str();
}

// ---- fit ----

/** The fewest bytes of one table some device must hold under its constraints (file comment). */
double smallest_piece_bytes(const Task& task, const TableSpec& t) {
  const double size = static_cast<double>(t.size_bytes());
  const double n = task.topology.num_devices();
  if (may_split_rows(task, t)) return size / n;
  if (allows(task, t, ShardingType::kColumnWise)) {
    const int width = std::max(4, t.constraints.min_partition);
    return size / std::min(n, std::max(1.0, std::floor(static_cast<double>(t.dim) / width)));
  }
  return size;
}

/** Whether a table may keep rows in UVM under the task's and its own constraints. */
bool may_use_uvm(const Task& task, const TableSpec& t) { return task.constraints.allow_uvm && t.constraints.allow_uvm; }

/** The smallest k in (lo, hi] at which `at` plans, bisected; `lo` is known to fail (its run, if it
 *  was planned here, in `below`) and `hi` to plan (`run`). On return `below` is the run at k − 1. */
struct Bisected {
  std::int64_t k = 0;
  CompareRow run;
  std::optional<CompareRow> below;
};
Bisected bisect(std::int64_t lo, Bisected b, const std::function<CompareRow(std::int64_t)>& at) {
  while (b.k - lo > 1) {
    const std::int64_t mid = lo + (b.k - lo) / 2;
    CompareRow r = at(mid);
    if (planned(r)) {
      b.k = mid, b.run = std::move(r);
    } else {
      lo = mid, b.below = std::move(r);
    }
  }
  return b;
}

/**
 * From `lo` (fails, `lo_run` if planned here), the first of lo + 1, then doubling steps up to
 * `most`, that plans, bisected back to the smallest; nullopt (with the last failure in
 * `last_failure`) when `most` fails too.
 */
std::optional<Bisected> smallest_that_plans(std::int64_t lo, std::int64_t most,
                                            const std::function<CompareRow(std::int64_t)>& at,
                                            CompareRow& last_failure) {
  std::optional<CompareRow> lo_run;
  std::int64_t hi = lo + 1;
  CompareRow run = at(hi);
  while (!planned(run) && hi < most) {
    lo = hi, lo_run = std::move(run);
    hi = std::min(most, 2 * lo + 1);
    run = at(hi);
  }
  if (!planned(run)) {
    last_failure = std::move(run);
    return std::nullopt;
  }
  return bisect(lo, Bisected{hi, std::move(run), std::move(lo_run)}, at);
}

/** The search of `advise_fit`: one method per kind of change, each adding a change or a line to
 *  `not_helping`. */
class FitSearch {
 public:
  FitSearch(const Task& task, const WhatIfOptions& options, const Context& ctx, FitAdvice& advice)
      : task_(task), options_(options), ctx_(ctx), advice_(advice) {}

  /** Runs `kind`; a kind this task cannot take (e.g. a mix whose last host has two kinds of
   *  device, resized) is listed, and the others are still tried. */
  void attempt(const std::string& kind, void (FitSearch::*search)()) {
    try {
      (this->*search)();
    } catch (const Error& e) {
      advice_.not_helping.push_back(kind + ": " + one_line(e.what()));
    }
  }

  void row_split() {
    task_wide_switch("row_split", "allow row splits (the task forbids them)", &Constraints::allow_row_split);
  }
  void column_split() {
    task_wide_switch("column_split", "allow column splits (the task forbids them)", &Constraints::allow_column_split);
  }
  void memory();
  void devices();
  void uvm();
  void table_types();

 private:
  CompareRow plan(const Task& changed) const { return plan_changed(changed, options_, ctx_); }
  void task_wide_switch(const std::string& kind, const std::string& what, bool Constraints::*flag);
  void per_table(const std::string& kind, const std::string& what, std::vector<std::size_t> candidates,
                 const std::function<void(Task&)>& prepare, const std::function<void(TableSpec&)>& relax,
                 const std::function<std::string(const TableSpec&)>& was);
  void add(FitChange change) { advice_.changes.push_back(std::move(change)); }
  void not_helping(const std::string& line) { advice_.not_helping.push_back(line); }
  /** "today's X: why it fails", for a change whose next smaller one is the task as it is. */
  std::string today(const std::string& what) const { return "today's " + what + ": " + failure(advice_.run); }

  const Task& task_;
  const WhatIfOptions& options_;
  const Context& ctx_;
  FitAdvice& advice_;
};

void FitSearch::memory() {
  // Every device gets the same HBM; on a mix whose devices differ, from the largest up (none loses).
  std::int64_t now = 0, least = kMaxDeviceBytes;
  double total = 0.0;
  for (const Device& d : task_.topology.devices) {
    now = std::max(now, d.hbm_bytes), least = std::min(least, d.hbm_bytes);
    total += static_cast<double>(d.hbm_bytes);
  }
  const auto with = [&](std::int64_t steps) {
    Task t = task_;
    t.topology = topology_with_hbm(task_.topology, steps * kMemoryStep);
    return t;
  };
  CompareRow failed;
  const std::int64_t most = kMaxDeviceBytes / kMemoryStep;
  const std::int64_t lo = least < now ? (now + kMemoryStep - 1) / kMemoryStep - 1 : now / kMemoryStep;
  auto b = smallest_that_plans(
      lo, most, [&](std::int64_t k) { return plan(with(k)); }, failed);
  if (!b)
    return not_helping("memory: even " + gib(static_cast<double>(most * kMemoryStep)) +
                       " of HBM per device: " + failure(failed));
  const double bytes = static_cast<double>(b->k * kMemoryStep), added = bytes - static_cast<double>(now);
  const std::string today_hbm =
      least < now ? gib(static_cast<double>(least)) + " to " + gib(static_cast<double>(now)) + " a device"
                  : gib(static_cast<double>(now));
  const double devices = task_.topology.num_devices();
  FitChange c{
      "memory",
      gib(bytes) + " of HBM per device (" + (least < now ? "" : "+" + gib(added) + ", ") + "today " + today_hbm + ")",
      total > 0 ? (bytes * devices - total) / total : std::numeric_limits<double>::infinity(),
      with(b->k),
      std::move(b->run),
      ""};
  c.next_smaller =
      b->below ? gib(bytes - static_cast<double>(kMemoryStep)) + ": " + failure(*b->below) : today(today_hbm);
  add(std::move(c));
}

void FitSearch::devices() {
  const int n = task_.topology.num_devices();
  const int most = static_cast<int>(std::min<std::int64_t>(kMaxDevices, std::max<std::int64_t>(1024, 64LL * n)));
  const std::vector<int> counts = device_counts(task_.topology, n + 1, most);
  if (counts.empty()) return;
  const auto with = [&](std::int64_t i) {
    Task t = task_;
    t.topology = topology_with_devices(task_.topology, counts[static_cast<std::size_t>(i)]);
    return t;
  };
  CompareRow failed;  // index −1 stands for today's count, which fails
  auto b = smallest_that_plans(
      -1, static_cast<std::int64_t>(counts.size()) - 1, [&](std::int64_t i) { return plan(with(i)); }, failed);
  if (!b) return not_helping("devices: even " + std::to_string(counts.back()) + " devices: " + failure(failed));
  const int devices = counts[static_cast<std::size_t>(b->k)];
  Task changed = with(b->k);
  const int hosts = changed.topology.num_hosts();
  const std::string like = task_.topology.first_unlike_device() < 0
                               ? ""
                               : detail::concat(" in hosts like device ", n - 1);  // a mix grows by its last kind
  FitChange c{"devices",
              std::to_string(devices) + " devices (+" + std::to_string(devices - n) + like + ", " +
                  std::to_string(hosts) + (hosts == 1 ? " host" : " hosts") + "; today " + std::to_string(n) + ")",
              static_cast<double>(devices - n) / n,
              std::move(changed),
              std::move(b->run),
              ""};
  const int smaller = b->k > 0 ? counts[static_cast<std::size_t>(b->k - 1)] : n;
  c.next_smaller =
      b->below ? std::to_string(smaller) + " devices: " + failure(*b->below) : today(std::to_string(n) + " devices");
  add(std::move(c));
}

void FitSearch::uvm() {
  bool room = false;
  for (const Device& d : task_.topology.devices) room = room || d.uvm_bytes > 0;
  if (!room) return;  // no device has host memory to offer
  std::vector<std::size_t> no_uvm;
  for (std::size_t i = 0; i < task_.workload.tables.size(); ++i) {
    if (!may_use_uvm(task_, task_.workload.tables[i])) no_uvm.push_back(i);
  }
  // The task-wide switch goes on; the tables not chosen keep (or get) allow_uvm = false.
  const auto prepare = [](Task& t) {
    if (t.constraints.allow_uvm) return;
    t.constraints.allow_uvm = true;
    for (TableSpec& s : t.workload.tables) s.constraints.allow_uvm = false;
  };
  per_table(
      "uvm", "allow UVM", no_uvm, prepare, [](TableSpec& s) { s.constraints.allow_uvm = true; },
      [](const TableSpec&) { return std::string(); });
}

void FitSearch::table_types() {
  std::vector<std::size_t> constrained;
  for (std::size_t i = 0; i < task_.workload.tables.size(); ++i) {
    const TableConstraints& c = task_.workload.tables[i].constraints;
    if (!c.sharding_types.empty() || c.min_partition > 0) constrained.push_back(i);
  }
  const auto relax = [](TableSpec& s) {
    s.constraints.sharding_types.clear();
    s.constraints.min_partition = 0;
  };
  const auto was = [](const TableSpec& s) {
    std::string types;
    for (ShardingType type : s.constraints.sharding_types)
      types += (types.empty() ? "" : "|") + std::string(to_string(type));
    return " (was " + (types.empty() ? "min_partition " + std::to_string(s.constraints.min_partition) : types) + ")";
  };
  per_table(
      "table_types", "allow any sharding type", constrained, [](Task&) {}, relax, was);
}

/** A relaxation of the k largest `candidates` (table indices), k bisected; `prepare` changes the
 *  copy of the task once, `relax` one table of it, `was` says what the table allowed before. */
void FitSearch::per_table(const std::string& kind, const std::string& what, std::vector<std::size_t> candidates,
                          const std::function<void(Task&)>& prepare, const std::function<void(TableSpec&)>& relax,
                          const std::function<std::string(const TableSpec&)>& was) {
  if (candidates.empty()) return;
  const auto& tables = task_.workload.tables;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](std::size_t a, std::size_t b) { return tables[a].size_bytes() > tables[b].size_bytes(); });
  const auto with = [&](std::int64_t k) {
    Task t = task_;
    prepare(t);
    for (std::int64_t i = 0; i < k; ++i) relax(t.workload.tables[candidates[static_cast<std::size_t>(i)]]);
    return t;
  };
  const auto all = static_cast<std::int64_t>(candidates.size());
  CompareRow run = plan(with(all));
  if (!planned(run))
    return not_helping(kind + ": " + what + " for all " + std::to_string(all) + " tables: " + failure(run));
  Bisected b = bisect(0, Bisected{all, std::move(run), std::nullopt}, [&](std::int64_t k) { return plan(with(k)); });
  std::string names;
  for (std::int64_t i = 0; i < b.k && i < 6; ++i) {
    const TableSpec& t = tables[candidates[static_cast<std::size_t>(i)]];
    names += (i ? ", '" : "'") + one_line(t.name) + "'" + was(t);
  }
  if (b.k > 6) names += ", ...";
  FitChange c{kind,
              what + " for the " + (b.k == 1 ? "largest table" : std::to_string(b.k) + " largest tables") + " of " +
                  std::to_string(all) + ": " + names,
              0.0,
              with(b.k),
              std::move(b.run),
              ""};
  c.next_smaller = b.below ? "the " + std::to_string(b.k - 1) + " largest: " + failure(*b.below) : today("constraints");
  add(std::move(c));
}

void FitSearch::task_wide_switch(const std::string& kind, const std::string& what, bool Constraints::*flag) {
  if (task_.constraints.*flag) return;
  Task t = task_;
  t.constraints.*flag = true;
  CompareRow run = plan(t);
  if (!planned(run)) return not_helping(kind + ": " + what + ": " + failure(run));
  add({kind, what, 0.0, std::move(t), std::move(run), today("constraints")});
}

void rank(std::vector<FitChange>& changes) {
  std::stable_sort(changes.begin(), changes.end(), [](const FitChange& a, const FitChange& b) {
    const bool a_free = a.added_share == 0, b_free = b.added_share == 0;
    if (a_free != b_free) return a_free;
    if (a.added_share != b.added_share) return a.added_share < b.added_share;
    return a.run.eval.step_ms < b.run.eval.step_ms;
  });
}

nlohmann::json run_json(const CompareRow& r) {
  return {{"status", r.status}, {"reason", r.reason}, {"step_ms", r.eval.step_ms}, {"plan_ms", r.plan_ms}};
}

}  // namespace

CapacityCurve plan_capacity(const Task& task, int min_devices, int max_devices, double target_ms,
                            const WhatIfOptions& options, const Context& ctx) {
  EMBSHARD_CHECK(std::isfinite(target_ms) && target_ms >= 0, "size: the target step must be a finite number of ms ≥ 0");
  const std::vector<int> counts = device_counts(task.topology, min_devices, max_devices);
  EMBSHARD_CHECK(!counts.empty(), "size: no device count between ", min_devices, " and ", max_devices,
                 " that this topology comes in (", describe_device_counts(task.topology), ")");
  CapacityCurve c;
  c.task_id = task.id;
  c.sharder = canonical_sharder_spec(options.sharder);
  c.judge = judge_spec(options.judge);
  c.target_ms = target_ms;
  c.min_devices = counts.front();
  c.max_devices = counts.back();
  std::vector<int> grid = grid_of(counts);
  for (int d : grid) c.points.push_back(capacity_point(task, d, options, ctx));
  if (target_ms > 0) {
    const auto first =
        std::find_if(c.points.begin(), c.points.end(), [&](const CapacityPoint& p) { return p.meets(target_ms); });
    if (first != c.points.end()) {
      // Bisect the counts strictly between the grid count before and this one (indices in
      // `counts`; −1 stands below the first).
      const auto index_of = [&](int devices) {
        return static_cast<std::ptrdiff_t>(std::find(counts.begin(), counts.end(), devices) - counts.begin());
      };
      std::ptrdiff_t lo = first == c.points.begin() ? -1 : index_of((first - 1)->devices);
      std::ptrdiff_t hi = index_of(first->devices);
      while (hi - lo > 1) {
        const std::ptrdiff_t mid = lo + (hi - lo) / 2;
        CapacityPoint p = capacity_point(task, counts[static_cast<std::size_t>(mid)], options, ctx);
        const bool meets = p.meets(target_ms);
        c.points.push_back(std::move(p));
        (meets ? hi : lo) = mid;
      }
      c.fewest = counts[static_cast<std::size_t>(hi)];
      std::sort(c.points.begin(), c.points.end(),
                [](const CapacityPoint& a, const CapacityPoint& b) { return a.devices < b.devices; });
    }
  }
  c.verdict = capacity_verdict(c);
  return c;
}

std::string capacity_csv(const CapacityCurve& c) {
  std::ostringstream out;
  out << "devices,hosts,status,step_ms,lower_bound_ms,plan_ms,meets,reason\n";
  for (const CapacityPoint& p : c.points) {
    std::string reason = one_line(p.run.reason);
    std::replace(reason.begin(), reason.end(), ',', ';');
    char row[160];
    std::snprintf(row, sizeof row, "%d,%d,%s,%.4f,%.4f,%.1f,%s,", p.devices, p.hosts, p.run.status.c_str(),
                  p.run.eval.step_ms, p.bound_ms, p.run.plan_ms,
                  c.target_ms > 0 && p.meets(c.target_ms) ? "yes" : "no");
    out << row << reason << "\n";
  }
  return out.str();
}

std::vector<std::string> memory_conflicts(const Task& task) {
  std::vector<std::string> out;
  double need = 0, hbm = 0, uvm = 0, largest = 0;
  for (const Device& d : task.topology.devices) {
    hbm += static_cast<double>(d.hbm_bytes);
    uvm += static_cast<double>(d.uvm_bytes);
    largest = std::max(largest, static_cast<double>(d.hbm_bytes));
  }
  double largest_uvm = 0;
  for (const Device& d : task.topology.devices)
    largest_uvm = std::max(largest_uvm, static_cast<double>(d.hbm_bytes + d.uvm_bytes));
  bool any_uvm = false;
  for (const TableSpec& t : task.workload.tables) {
    need += static_cast<double>(t.size_bytes());
    any_uvm = any_uvm || may_use_uvm(task, t);
  }
  const std::string devices = std::to_string(task.topology.num_devices()) + " devices";
  if (need > hbm + (any_uvm ? uvm : 0.0)) {
    out.push_back("the " + std::to_string(task.workload.tables.size()) + " tables need " + gib(need) + "; the " +
                  devices + " hold " + gib(hbm) + " of HBM" +
                  (any_uvm ? " and " + gib(uvm) + " of UVM" : " (UVM not allowed)"));
  }
  for (const TableSpec& t : task.workload.tables) {
    const double piece = smallest_piece_bytes(task, t);
    const double room = may_use_uvm(task, t) ? largest_uvm : largest;
    if (piece > room) {
      out.push_back("table '" + one_line(t.name) + "' (" + gib(static_cast<double>(t.size_bytes())) +
                    ") leaves at least " + gib(piece) +
                    " on some device under its constraints; the largest device holds " + gib(room) +
                    (may_use_uvm(task, t) ? " with UVM" : " of HBM"));
    }
  }
  return out;
}

FitAdvice advise_fit(const Task& task, const WhatIfOptions& options, const Context& ctx) {
  FitAdvice advice;
  advice.run = plan_changed(task, options, ctx);
  if (planned(advice.run)) return advice;
  advice.conflicts = memory_conflicts(task);
  advice.conflicts.push_back(advice.run.sharder.substr(0, advice.run.sharder.find(':')) + ": " + failure(advice.run));
  FitSearch search(task, options, ctx, advice);
  search.attempt("row_split", &FitSearch::row_split);
  search.attempt("column_split", &FitSearch::column_split);
  search.attempt("uvm", &FitSearch::uvm);
  search.attempt("table_types", &FitSearch::table_types);
  search.attempt("memory", &FitSearch::memory);
  search.attempt("devices", &FitSearch::devices);
  rank(advice.changes);
  return advice;
}

namespace {

constexpr int kExplainAllDevicesUpTo = 16;
constexpr int kExplainCandidates = 8;

std::string describe_placement(const TablePlacement& p) {
  std::set<int> devices;
  for (const Shard& s : p.shards) devices.insert(s.device);
  std::string list;
  int count = 0;
  for (int d : devices) {
    if (++count > 6) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "" : ", ") + std::to_string(d);
  }
  return std::string(to_string(p.type)) + (devices.size() == 1 ? " on device " : " on devices ") + list;
}

/** The placements `explain_plan` tries for table `t` instead of `now`. */
std::vector<TablePlacement> alternatives(int n, const TableSpec& t, const TablePlacement& now,
                                         const std::vector<int>& devices) {
  std::vector<TablePlacement> out;
  Shard whole;
  whole.row_end = t.num_rows(), whole.col_end = t.dim;
  const bool is_whole = now.shards.size() == 1;
  for (int d : devices) {
    if (is_whole && now.shards.front().device == d) continue;
    whole.device = d;
    out.push_back({t.name, ShardingType::kTableWise, {whole}});
  }
  if (is_whole && n > 1 && t.num_rows() >= n) {
    TablePlacement rows{t.name, ShardingType::kRowWise, {}};
    const std::int64_t block = (t.num_rows() + n - 1) / n;
    for (int d = 0; d < n && d * block < t.num_rows(); ++d) {
      Shard s = whole;
      s.device = d, s.row_begin = d * block, s.row_end = std::min(t.num_rows(), (d + 1) * block);
      rows.shards.push_back(s);
    }
    out.push_back(std::move(rows));
  }
  return out;
}

}  // namespace

std::vector<TableExplanation> explain_plan(const Task& task, const Plan& plan, CostModel& judge, const Context& ctx,
                                           std::size_t most_tables) {
  const CostBreakdown base = judge.estimate(task, plan, ctx);
  const double step = objective_value(base, Objective::kStep);
  // The devices tried: all when few, else the least loaded (by their summed time).
  std::vector<int> by_load(base.devices.size());
  std::iota(by_load.begin(), by_load.end(), 0);
  std::stable_sort(by_load.begin(), by_load.end(),
                   [&](int a, int b) { return base.devices[a].sum_ms() < base.devices[b].sum_ms(); });
  if (static_cast<int>(by_load.size()) > kExplainAllDevicesUpTo) by_load.resize(kExplainCandidates);
  std::map<std::string, const TableSpec*> spec;
  for (const TableSpec& t : task.workload.tables) spec[t.name] = &t;
  std::vector<std::size_t> order(plan.tables.size());
  std::iota(order.begin(), order.end(), 0);
  const auto weight = [&](std::size_t i) {
    const TableSpec& t = *spec.at(plan.tables[i].table);
    return static_cast<double>(t.stats.num_indices) * t.dim;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return weight(a) > weight(b); });
  if (order.size() > most_tables) order.resize(most_tables);
  std::vector<TableExplanation> out;
  for (std::size_t i : order) {
    const TablePlacement& now = plan.tables[i];
    TableExplanation e{now.table, describe_placement(now), "", 0.0};
    std::vector<int> devices = by_load;
    for (const Shard& s : now.shards)
      if (std::find(devices.begin(), devices.end(), s.device) == devices.end()) devices.push_back(s.device);
    Plan changed = plan;
    for (const TablePlacement& alt :
         alternatives(static_cast<int>(base.devices.size()), *spec.at(now.table), now, devices)) {
      changed.tables[i] = alt;
      if (!find_error_in_plan(task, changed).empty()) continue;
      const double delta = objective_value(judge.estimate(task, changed, ctx), Objective::kStep) - step;
      if (e.next_best.empty() || delta < e.next_best_delta_ms)
        e.next_best = describe_placement(alt), e.next_best_delta_ms = delta;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string capacity_json(const CapacityCurve& c) {
  nlohmann::json points = nlohmann::json::array();
  for (const CapacityPoint& p : c.points) {
    nlohmann::json j = run_json(p.run);
    j["devices"] = p.devices, j["hosts"] = p.hosts, j["lower_bound_ms"] = p.bound_ms;
    j["meets"] = c.target_ms > 0 && p.meets(c.target_ms);
    points.push_back(std::move(j));
  }
  return nlohmann::json{{"task_id", c.task_id},     {"sharder", c.sharder},         {"judge", c.judge},
                        {"target_ms", c.target_ms}, {"min_devices", c.min_devices}, {"max_devices", c.max_devices},
                        {"fewest", c.fewest},       {"verdict", c.verdict},         {"points", points}}
      .dump();
}

std::string fit_advice_json(const FitAdvice& a) {
  nlohmann::json changes = nlohmann::json::array();
  for (const FitChange& c : a.changes) {
    nlohmann::json j = run_json(c.run);
    j["kind"] = c.kind, j["description"] = c.description, j["added_share"] = c.added_share;
    j["next_smaller"] = c.next_smaller, j["task"] = task_to_json(c.task);
    changes.push_back(std::move(j));
  }
  return nlohmann::json{{"fits", planned(a.run)},
                        {"run", run_json(a.run)},
                        {"conflicts", a.conflicts},
                        {"changes", changes},
                        {"not_helping", a.not_helping}}
      .dump();
}

}  // namespace embshard
