// The comparison harness (compare.h).
#include "embshard/eval/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/markup.h"
#include "embshard/core/parallel.h"
#include "embshard/core/progress.h"
#include "embshard/core/spec.h"
#include "embshard/cost/cost_model.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"

namespace embshard {
namespace {

constexpr const char* kCsvHeader =
    "task_id,setting,sharder,status,step_ms,max_sum_ms,balance,plan_ms,lower_bound_ms,reason";

/** The setting a task's row is grouped by: "d4 m128"-style for a protocol's task; its protocol
 *  text as is when that is no protocol spec (a hand-written task's free text); else "hand-written". */
std::string setting_of(const Task& task) {
  if (task.protocol.empty()) return "hand-written";
  Spec spec;
  try {
    spec = parse_spec(task.protocol);
  } catch (const Error&) {
    return task.protocol;  // free text: the CSV and reports quote and escape it
  }
  std::string devices;
  std::string max_dim;
  for (const auto& [key, value] : spec.pairs) {
    if (key == "devices") devices = value;
    if (key == "max_dim") max_dim = value;
  }
  if (devices.empty() || max_dim.empty()) return task.protocol;
  return spec.name + " d" + devices + " m" + max_dim;
}

/** Plans one task with one sharder (no evaluation yet); the plan goes to `plan`. */
CompareRow plan_row(const Task& task, const std::string& sharder, const CompareOptions& options, const Context& ctx,
                    Plan& plan) {
  const auto cost = make_cost_model(options.cost, task, ctx);
  ShardResult r = plan_task(sharder, task, cost.get(), ctx);
  plan = std::move(r.plan);
  CompareRow row;
  row.task_id = task.id;
  row.setting = setting_of(task);
  row.sharder = plan.provenance.sharder;
  row.status = to_string(r.status);
  row.reason = r.reason;
  row.plan_ms = plan.provenance.wall_ms;
  // A bound of one model says nothing of another's costs: only the sim judge of the sim model.
  if (cost->spec() == judge_spec(options.judge)) {
    const bool known = r.lower_bound && r.bound_objective == Objective::kStep;
    row.lower_bound_ms = (known ? r.lower_bound : cost->lower_bound(task, Objective::kStep)).value_or(0.0);
  }
  return row;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return quoted + "\"";
}

/** Text for one Markdown table cell: control characters escaped (core/markup.h `one_line`) and
 *  '|' — the cell separator, which the HTML report splits on too — as '¦'. */
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : one_line(text)) out += c == '|' ? std::string("\u00a6") : std::string(1, c);
  return out;
}

std::string number(double value, int decimals = 3) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

template <class T>
std::vector<T> unique_in_order(const std::vector<CompareRow>& rows, T CompareRow::*field) {
  std::vector<T> out;
  for (const CompareRow& r : rows) {
    if (std::find(out.begin(), out.end(), r.*field) == out.end()) out.push_back(r.*field);
  }
  return out;
}

}  // namespace

const CompareRow* fastest_row(const std::vector<CompareRow>& rows,
                              const std::function<bool(const std::string&)>& pick) {
  const CompareRow* best = nullptr;
  for (const CompareRow& r : rows) {
    if (r.ok() && (!pick || pick(r.sharder)) && (best == nullptr || r.eval.step_ms < best->eval.step_ms)) best = &r;
  }
  return best;
}

std::vector<std::string> default_sharders() {
  std::vector<std::string> specs;
  for (const RegistryEntryInfo& info : sharder_registry().list()) {
    // exhaustive is for tiny tasks; the RL sharders need a trained policy file; recshard's MILP
    // may use its whole time limit (60 s) per task: name it to run it.
    if (info.name == "exhaustive" || info.name == "dreamshard" || info.name == "autoshard" || info.name == "recshard") {
      continue;
    }
    if (info.name != "greedy") {
      specs.push_back(info.name);
      // TorchRec's planner as users run it: its own bandwidth constants, not the topology's.
      if (info.name == "torchrec") specs.push_back("torchrec:bandwidths=torchrec");
      continue;
    }
    // Every balance greedy declares but paper 004's per-sample variants (`*_present`), which only
    // RecShard's benchmark uses.
    for (const std::string& balance : sharder_registry().choices("greedy", "balance")) {
      if (!balance.ends_with("_present")) specs.push_back("greedy:balance=" + balance);
    }
  }
  return specs;
}

bool is_baseline(const std::string& sharder_spec) {
  const std::string name = parse_spec(sharder_spec).name;
  return name == "random" || name == "greedy";
}

std::vector<Task> read_task_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  EMBSHARD_CHECK(fs::exists(dir, ec), dir, ": no such directory");
  EMBSHARD_CHECK(fs::is_directory(dir, ec), dir, ": is not a directory (give a directory of task files)");
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  EMBSHARD_CHECK(!paths.empty(), dir, ": no *.json task files");
  std::vector<Task> tasks;
  for (const std::string& path : paths) tasks.push_back(read_task_file(path));
  return tasks;
}

std::vector<CompareRow> run_compare(const std::vector<Task>& tasks, const CompareOptions& options, const Context& ctx,
                                    std::vector<Plan>* plans_out) {
  EMBSHARD_CHECK(!options.sharders.empty(), "compare: no sharders given");
  for (const std::string& s : options.sharders) (void)canonical_sharder_spec(s);  // fail early
  // A judge that times kernels judges one plan at a time (an unknown judge fails here, before planning).
  const bool measured = !tasks.empty() && make_judge(tasks.front(), options.judge, ctx)->measures();
  const std::size_t per_task = options.sharders.size();
  std::vector<CompareRow> rows(tasks.size() * per_task);
  std::vector<Plan> plans(rows.size());
  // One live line over both passes (each row is planned, then judged); the inner work stays quiet.
  Progress progress(ctx, "compare: plans planned and judged", static_cast<std::int64_t>(2 * rows.size()));
  Context inner = ctx;
  inner.progress = nullptr;
  parallel_for(tasks.size(), ctx.num_threads, [&](std::size_t t) {
    for (std::size_t s = 0; s < per_task; ++s) {
      const std::size_t i = t * per_task + s;
      rows[i] = plan_row(tasks[t], options.sharders[s], options, inner, plans[i]);
      progress.advance();
    }
  });
  const auto evaluate = [&](std::size_t i) {
    CompareRow& row = rows[i];
    if (row.ok()) row.eval = evaluate_plan(tasks[i / per_task], plans[i], options.judge, inner);
    progress.advance();
  };
  parallel_for(rows.size(), measured ? 1 : ctx.num_threads, evaluate);
  progress.finish(detail::concat(tasks.size(), " tasks × ", per_task, " sharders, judged by ", options.judge));
  if (plans_out != nullptr) *plans_out = std::move(plans);
  return rows;
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::ostringstream out;
  out << kCsvHeader << '\n';
  for (const CompareRow& r : rows) {
    out << csv_field(r.task_id) << ',' << csv_field(r.setting) << ',' << csv_field(r.sharder) << ',' << r.status << ','
        << number(r.eval.step_ms) << ',' << number(r.eval.max_sum_ms) << ',' << number(r.eval.balance) << ','
        << number(r.plan_ms) << ',' << number(r.lower_bound_ms) << ',' << csv_field(r.reason) << '\n';
  }
  return out.str();
}

namespace {

/** Relative difference within which two step times tie in the win/tie/loss count. */
constexpr double kTieTolerance = 1e-3;

/** One task's rows (one per sharder) and whether every sharder planned it. */
struct TaskRows {
  std::string setting;
  std::vector<const CompareRow*> rows;
  [[nodiscard]] bool all_ok() const {
    return std::all_of(rows.begin(), rows.end(), [](const CompareRow* r) { return r->ok(); });
  }
  [[nodiscard]] const CompareRow* of(const std::string& sharder) const {
    for (const CompareRow* r : rows) {
      if (r->sharder == sharder) return r;
    }
    return nullptr;
  }
};

std::vector<TaskRows> rows_by_task(const std::vector<CompareRow>& rows) {
  std::vector<TaskRows> tasks;
  std::map<std::string, std::size_t> index;
  for (const CompareRow& r : rows) {
    const auto [it, added] = index.emplace(r.task_id, tasks.size());
    if (added) tasks.push_back({r.setting, {}});
    tasks[it->second].rows.push_back(&r);
  }
  return tasks;
}

/** A sharder's figures over all settings: the columns right of the per-setting means. */
struct SharderSummary {
  int valid = 0, count = 0, bounded = 0, wins = 0, ties = 0, losses = 0;
  double step = 0.0, plan_ms = 0.0, gap = 0.0, uvm_share = 0.0;
};

SharderSummary summarise(const std::string& sharder, const std::vector<TaskRows>& tasks) {
  SharderSummary s;
  for (const TaskRows& task : tasks) {
    const CompareRow* mine = task.of(sharder);
    if (mine == nullptr) continue;
    ++s.count;
    s.plan_ms += mine->plan_ms;
    if (!mine->ok()) continue;
    ++s.valid;
    s.step += mine->eval.step_ms;
    s.uvm_share += uvm_lookup_share(mine->eval);
    if (mine->lower_bound_ms > 0) {
      s.gap += gap_to_bound(mine->eval.step_ms, mine->lower_bound_ms);
      ++s.bounded;
    }
    double best_other = std::numeric_limits<double>::infinity();
    for (const CompareRow* r : task.rows) {
      if (r != mine && r->ok()) best_other = std::min(best_other, r->eval.step_ms);
    }
    if (!std::isfinite(best_other)) continue;  // nobody else planned it: no contest
    if (mine->eval.step_ms < best_other * (1.0 - kTieTolerance)) {
      ++s.wins;
    } else if (mine->eval.step_ms > best_other * (1.0 + kTieTolerance)) {
      ++s.losses;
    } else {
      ++s.ties;
    }
  }
  return s;
}

/** A setting's cell: the mean over the tasks every sharder planned, else over its own plans (*). */
std::string setting_cell(const std::string& sharder, const std::string& setting, const std::vector<TaskRows>& tasks) {
  double common = 0.0, own = 0.0;
  int n_common = 0, n_own = 0;
  for (const TaskRows& task : tasks) {
    const CompareRow* mine = task.of(sharder);
    if (task.setting != setting || mine == nullptr || !mine->ok()) continue;
    own += mine->eval.step_ms;
    ++n_own;
    if (task.all_ok()) {
      common += mine->eval.step_ms;
      ++n_common;
    }
  }
  if (n_common > 0) return number(common / n_common, 2);
  if (n_own > 0) return number(own / n_own, 2) + "*";
  return "-";
}

std::string fraction_or_dash(double numerator, int denominator, double scale, int decimals, const std::string& unit) {
  return denominator > 0 ? number(scale * numerator / denominator, decimals) + unit : "-";
}

}  // namespace

namespace {

/** The fields of one CSV line (RFC 4180 quoting, as csv_field writes it); Error on a bad quote. */
std::vector<std::string> csv_fields(const std::string& line, const std::string& where) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  EMBSHARD_CHECK(!quoted, where, ": a quoted field is not closed");
  return fields;
}

double csv_number(const std::string& text, const std::string& where, const char* column) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  EMBSHARD_CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value) && value >= 0, where,
                 ": column ", column, ": expected a finite number ≥ 0, got '", text, "'");
  return value;
}

CompareRow csv_row(const std::vector<std::string>& f, const std::string& where) {
  CompareRow r;
  r.task_id = f[0];
  r.setting = f[1];
  r.sharder = f[2];
  r.status = f[3];
  EMBSHARD_CHECK(r.status == "ok" || r.status == "infeasible" || r.status == "time_limit", where,
                 ": column status: expected ok, infeasible or time_limit, got '", r.status, "'");
  r.eval.step_ms = csv_number(f[4], where, "step_ms");
  r.eval.max_sum_ms = csv_number(f[5], where, "max_sum_ms");
  r.eval.balance = csv_number(f[6], where, "balance");
  r.plan_ms = csv_number(f[7], where, "plan_ms");
  r.lower_bound_ms = csv_number(f[8], where, "lower_bound_ms");
  r.reason = f[9];
  return r;
}

}  // namespace

std::vector<CompareRow> read_compare_csv(const std::string& path) {
  std::istringstream lines(read_file(path));
  std::string line;
  EMBSHARD_CHECK(std::getline(lines, line), path, ": empty file (expected a CSV that embshard compare wrote)");
  EMBSHARD_CHECK(line == kCsvHeader, path, ": line 1: not a comparison CSV of this version: expected the header '",
                 kCsvHeader, "'");
  const std::size_t columns = csv_fields(kCsvHeader, path).size();
  std::vector<CompareRow> rows;
  for (int number = 2; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    const std::string where = path + ": line " + std::to_string(number);
    const std::vector<std::string> f = csv_fields(line, where);
    EMBSHARD_CHECK(f.size() == columns, where, ": ", f.size(), " columns, expected ", columns);
    rows.push_back(csv_row(f, where));
  }
  EMBSHARD_CHECK(!rows.empty(), path, ": no rows (an empty comparison)");
  return rows;
}

CompareSummary compare_summary(const std::vector<CompareRow>& rows) {
  const auto settings = unique_in_order(rows, &CompareRow::setting);
  const auto sharders = unique_in_order(rows, &CompareRow::sharder);
  const std::vector<TaskRows> tasks = rows_by_task(rows);
  // The UVM column appears only when some evaluated plan serves lookups from UVM.
  const bool any_uvm = std::any_of(rows.begin(), rows.end(),
                                   [](const CompareRow& r) { return r.ok() && uvm_lookup_share(r.eval) > 0.0; });
  CompareSummary summary;
  summary.note =
      "Step time in ms (docs/metrics.md). Per setting: the mean over the setting's tasks that every sharder planned "
      "(n of them in the header), so a column compares like with like; `*`: no task of the setting was planned by "
      "every sharder, the mean of the sharder's own valid plans; `-`: it planned none. *own mean*: over all its valid "
      "plans. *W/T/L*: tasks where it beat / tied (within " +
      number(100.0 * kTieTolerance, 1) + "%) / lost to the best other sharder. *gap*: mean gap to the lower bound." +
      (any_uvm ? " *UVM lookups*: the mean share of lookups served from UVM over its valid plans." : "");
  summary.header.push_back("sharder");
  for (const auto& setting : settings) {
    int n = 0, all = 0;
    for (const TaskRows& task : tasks) {
      if (task.setting != setting) continue;
      ++all;
      n += task.all_ok();
    }
    summary.header.push_back(one_line(setting) + " (n=" + std::to_string(n) + " of " + std::to_string(all) + ")");
  }
  for (const char* column : {"own mean", "valid", "W/T/L", "plan ms", "gap"}) summary.header.push_back(column);
  if (any_uvm) summary.header.push_back("UVM lookups");
  for (const std::string& sharder : sharders) {
    std::vector<std::string>& row = summary.rows.emplace_back();
    row.push_back(one_line(short_sharder_spec(sharder)));
    for (const std::string& setting : settings) row.push_back(setting_cell(sharder, setting, tasks));
    const SharderSummary s = summarise(sharder, tasks);
    row.push_back(fraction_or_dash(s.step, s.valid, 1.0, 2, ""));
    row.push_back(std::to_string(s.valid) + '/' + std::to_string(s.count));
    row.push_back(std::to_string(s.wins) + '/' + std::to_string(s.ties) + '/' + std::to_string(s.losses));
    row.push_back(fraction_or_dash(s.plan_ms, s.count, 1.0, 2, ""));
    row.push_back(fraction_or_dash(s.gap, s.bounded, 100.0, 1, "%"));
    if (any_uvm) row.push_back(fraction_or_dash(s.uvm_share, s.valid, 100.0, 2, "%"));
  }
  summary.sharders_note = "Sharders in full: ";
  for (std::size_t i = 0; i < sharders.size(); ++i)
    summary.sharders_note += (i ? "; `" : "`") + one_line(sharders[i]) + '`';
  summary.sharders_note += '.';
  return summary;
}

std::string compare_markdown(const std::vector<CompareRow>& rows) {
  const CompareSummary summary = compare_summary(rows);
  const auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const std::string& c : cells) out += ' ' + markdown_cell(c) + " |";
    return out + '\n';
  };
  std::string out = summary.note + "\n\n" + line(summary.header) + "|";
  for (std::size_t i = 0; i < summary.header.size(); ++i) out += "---|";
  out += '\n';
  for (const auto& row : summary.rows) out += line(row);
  return out + '\n' + summary.sharders_note + '\n';
}

}  // namespace embshard
