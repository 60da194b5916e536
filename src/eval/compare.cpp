// The comparison harness (compare.h).
#include "embshard/eval/compare.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/core/parallel.h"
#include "embshard/core/spec.h"
#include "embshard/cost/cost_model.h"
#include "embshard/data/data_io.h"
#include "embshard/shard/sharder.h"

namespace embshard {
namespace {

std::string setting_of(const Task& task) {
  if (task.protocol.empty()) return "hand-written";
  const Spec spec = parse_spec(task.protocol);
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
CompareRow plan_row(const Task& task, const std::string& sharder, const CompareOptions& options,
                    const Context& ctx, Plan& plan) {
  const auto cost = make_cost_model(options.cost, task);
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
  if (options.eval.backend == "sim" && cost->spec() == "sim") {
    row.lower_bound_ms = cost->lower_bound(task, Objective::kStep).value_or(0.0);
  }
  return row;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return quoted + "\"";
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

std::vector<std::string> default_sharders() {
  std::vector<std::string> specs;
  for (const RegistryEntryInfo& info : sharder_registry().list()) {
    // exhaustive is for tiny tasks; the RL sharders need a trained policy file; recshard's MILP
    // may use its whole time limit (60 s) per task: name it to run it.
    if (info.name == "exhaustive" || info.name == "dreamshard" || info.name == "autoshard" ||
        info.name == "recshard") {
      continue;
    }
    if (info.name != "greedy") {
      specs.push_back(info.name);
      continue;
    }
    for (const char* balance : {"size", "dim", "lookup", "size_lookup", "size_and_lookup"}) {
      specs.push_back(std::string("greedy:balance=") + balance);
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

std::vector<CompareRow> run_compare(const std::vector<Task>& tasks, const CompareOptions& options,
                                    const Context& ctx) {
  EMBSHARD_CHECK(!options.sharders.empty(), "compare: no sharders given");
  for (const std::string& s : options.sharders) (void)canonical_sharder_spec(s);  // fail early
  const std::size_t per_task = options.sharders.size();
  std::vector<CompareRow> rows(tasks.size() * per_task);
  std::vector<Plan> plans(rows.size());
  parallel_for(tasks.size(), ctx.num_threads, [&](std::size_t t) {
    for (std::size_t s = 0; s < per_task; ++s) {
      const std::size_t i = t * per_task + s;
      rows[i] = plan_row(tasks[t], options.sharders[s], options, ctx, plans[i]);
    }
  });
  const bool measured = options.eval.backend != "sim";
  const auto evaluate = [&](std::size_t i) {
    CompareRow& row = rows[i];
    if (row.status != "ok") return;
    row.eval = evaluate_plan(tasks[i / per_task], plans[i], options.eval, ctx);
  };
  parallel_for(rows.size(), measured ? 1 : ctx.num_threads, evaluate);
  return rows;
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::ostringstream out;
  out << "task_id,setting,sharder,status,step_ms,max_sum_ms,balance,plan_ms,lower_bound_ms,reason\n";
  for (const CompareRow& r : rows) {
    out << csv_field(r.task_id) << ',' << csv_field(r.setting) << ',' << csv_field(r.sharder) << ','
        << r.status << ',' << number(r.eval.step_ms) << ',' << number(r.eval.max_sum_ms)
        << ',' << number(r.eval.balance) << ',' << number(r.plan_ms) << ',' << number(r.lower_bound_ms) << ','
        << csv_field(r.reason) << '\n';
  }
  return out.str();
}

std::string compare_markdown(const std::vector<CompareRow>& rows) {
  const auto settings = unique_in_order(rows, &CompareRow::setting);
  const auto sharders = unique_in_order(rows, &CompareRow::sharder);
  // The UVM column appears only when some evaluated plan serves lookups from UVM.
  const bool any_uvm = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) {
    return r.status == "ok" && uvm_lookup_share(r.eval) > 0.0;
  });
  std::ostringstream out;
  out << "Mean step_ms per setting (\"-\": a task was not planned), valid plans, mean planning ms, "
         "mean gap to the lower bound"
      << (any_uvm ? ", mean share of lookups served from UVM over valid plans" : "")
      << ".\n\n| sharder |";
  for (const auto& s : settings) out << ' ' << s << " |";
  out << " valid | plan ms | gap |" << (any_uvm ? " UVM lookups |" : "") << "\n|---|";
  for (std::size_t i = 0; i < settings.size() + 3 + (any_uvm ? 1 : 0); ++i) out << "---|";
  out << '\n';
  for (const std::string& sharder : sharders) {
    out << "| " << sharder << " |";
    int valid = 0, count = 0, bounded = 0;
    double plan_ms = 0.0, gap = 0.0, uvm_share = 0.0;
    for (const std::string& setting : settings) {
      double sum = 0.0;
      int n = 0;
      bool all_ok = true;
      for (const CompareRow& r : rows) {
        if (r.sharder != sharder || r.setting != setting) continue;
        ++count;
        plan_ms += r.plan_ms;
        if (r.status != "ok") {
          all_ok = false;
          continue;
        }
        ++valid;
        ++n;
        sum += r.eval.step_ms;
        uvm_share += uvm_lookup_share(r.eval);
        if (r.lower_bound_ms > 0) {
          gap += (r.eval.step_ms - r.lower_bound_ms) / r.lower_bound_ms;
          ++bounded;
        }
      }
      out << ' ' << (all_ok && n > 0 ? number(sum / n, 2) : std::string("-")) << " |";
    }
    out << ' ' << valid << '/' << count << " | " << number(count ? plan_ms / count : 0.0, 2)
        << " | " << (bounded ? number(100.0 * gap / bounded, 1) + "%" : std::string("-")) << " |";
    if (any_uvm) out << ' ' << (valid ? number(100.0 * uvm_share / valid, 2) + "%" : std::string("-")) << " |";
    out << '\n';
  }
  return out.str();
}

std::string breakdown_svg(const std::vector<CompareRow>& rows, const std::string& task_id) {
  std::vector<const CompareRow*> panels;
  for (const CompareRow& r : rows) {
    if (r.task_id == task_id && r.status == "ok") panels.push_back(&r);
  }
  EMBSHARD_CHECK(!panels.empty(), "compare: no sharder produced a plan for task '", task_id, "'");
  double most = 1e-9;
  for (const CompareRow* p : panels) {
    for (const DeviceCost& d : p->eval.breakdown.devices) most = std::max(most, d.sum_ms());
  }
  constexpr double kPanelW = 260, kPanelH = 220, kPlotH = 160, kTop = 30;
  constexpr const char* kColours[] = {"#4c78a8", "#f58518", "#e45756", "#72b7b2"};
  constexpr const char* kParts[] = {"fw comp", "fw comm", "bw comm", "bw comp"};
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kPanelW * panels.size()
      << "' height='" << kPanelH + 30 << "' font-family='sans-serif' font-size='10'>\n";
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const auto& devices = panels[p]->eval.breakdown.devices;
    const double x0 = kPanelW * p + 30;
    const double bar_w = std::min(30.0, (kPanelW - 50) / std::max<std::size_t>(devices.size(), 1) * 0.8);
    svg << "<text x='" << x0 << "' y='15'>" << panels[p]->sharder << " — step "
        << number(panels[p]->eval.step_ms, 2) << " ms</text>\n";
    for (std::size_t d = 0; d < devices.size(); ++d) {
      const double parts[] = {devices[d].fw_comp_ms, devices[d].fw_comm_ms, devices[d].bw_comm_ms,
                              devices[d].bw_comp_ms};
      double y = kTop + kPlotH;
      const double x = x0 + d * bar_w / 0.8;
      for (int k = 0; k < 4; ++k) {
        const double h = parts[k] / most * kPlotH;
        y -= h;
        svg << "<rect x='" << number(x, 1) << "' y='" << number(y, 1) << "' width='" << number(bar_w, 1)
            << "' height='" << number(h, 1) << "' fill='" << kColours[k] << "'><title>device " << d
            << " " << kParts[k] << " " << number(parts[k]) << " ms</title></rect>\n";
      }
      svg << "<text x='" << number(x, 1) << "' y='" << kTop + kPlotH + 12 << "'>" << d << "</text>\n";
    }
  }
  for (int k = 0; k < 4; ++k) {
    svg << "<rect x='" << 30 + 70 * k << "' y='" << kPanelH + 12 << "' width='10' height='10' fill='"
        << kColours[k] << "'/><text x='" << 44 + 70 * k << "' y='" << kPanelH + 21 << "'>" << kParts[k]
        << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace embshard
