#include "embshard/eval/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/kernels/cuda_embedding_bag.h"
#include "eval/measured_model.h"

namespace embshard {
namespace {

using Json = nlohmann::json;

std::string backend_list() {
  std::string list;
  for (const std::string& name : eval_backends()) list += (list.empty() ? "" : ", ") + name;
  return list;
}

void fill_measured_comm(std::span<const DeviceTiming> measured, InputCommMode input_comm, CostBreakdown& breakdown) {
  EMBSHARD_CHECK(measured.size() == breakdown.devices.size(), "eval: ", measured.size(), " measured all-to-alls for ",
                 breakdown.devices.size(), " devices");
  std::vector<double> input_ms;
  for (std::size_t d = 0; d < measured.size(); ++d) {
    breakdown.devices[d].fw_comm_ms = measured[d].fw_ms;
    breakdown.devices[d].bw_comm_ms = measured[d].bw_ms;
    input_ms.push_back(measured[d].in_ms);
  }
  const bool input_measured =
      std::any_of(measured.begin(), measured.end(), [](const DeviceTiming& t) { return t.in_ms > 0; });
  if (input_measured) apply_input_comm(input_ms, input_comm, breakdown);
  breakdown.comm_source = CostSource::kMeasured;
  breakdown.comm_detail = detail::concat(
      "MPI all-to-alls, one rank per device (", measured.size(), " ranks), input all-to-all ",
      input_measured ? "measured too, " + std::string(to_string(input_comm)) : "from the " + breakdown.comm_detail);
}

}  // namespace

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  double var = 0.0;
  for (double v : values) var += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(var / static_cast<double>(values.size()));
  return s;
}

std::vector<DeviceLookups> tier_lookups(const Task& task, const Plan& plan, std::int64_t batch_size) {
  const double batch_ratio = task.workload.batch_size > 0
                                 ? static_cast<double>(batch_size) / static_cast<double>(task.workload.batch_size)
                                 : 1.0;
  const auto by_device = shards_by_device(task, plan);
  std::vector<DeviceLookups> out(by_device.size());
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    for (const PlacedShard& p : by_device[d]) {
      const TableStats& stats = task.workload.tables[static_cast<std::size_t>(p.table)].stats;
      const double copy_share = p.is_replica() ? 1.0 / p.replicas : 1.0;  // its device's samples
      const double lookups = copy_share * batch_ratio * static_cast<double>(stats.num_indices) *
                             static_cast<double>(p.shard.num_rows()) /
                             static_cast<double>(std::max<std::int64_t>(stats.num_rows, 1));
      const double hot = sim_hbm_access_share(stats, p.shard.num_rows(), p.shard.hbm_rows);
      out[d].hbm += lookups * hot;
      out[d].uvm += lookups * (1.0 - hot);
    }
  }
  return out;
}

Spread compute_spread(const EvalResult& result) {
  std::vector<double> comp;
  for (const DeviceCost& c : result.breakdown.devices) comp.push_back(c.fw_comp_ms + c.bw_comp_ms);
  return spread_of(comp);
}

namespace {

DeviceLookups total_lookups(const EvalResult& result) {
  DeviceLookups total;
  for (const DeviceLookups& l : result.lookups) {
    total.hbm += l.hbm;
    total.uvm += l.uvm;
  }
  return total;
}

/** Spread over devices of the per-device step (sum_ms). */
Spread step_spread(const EvalResult& result) {
  std::vector<double> sums;
  for (const DeviceCost& c : result.breakdown.devices) sums.push_back(c.sum_ms());
  return spread_of(sums);
}

}  // namespace

double uvm_lookup_share(const EvalResult& result) {
  const DeviceLookups total = total_lookups(result);
  return total.hbm + total.uvm > 0 ? total.uvm / (total.hbm + total.uvm) : 0.0;
}

std::vector<std::string> eval_backends() {
  std::vector<std::string> names{kSimJudge};
  for (kernels::EmbeddingBagImpl impl : kernels::embedding_bag_impls()) {
    names.emplace_back(kernels::to_string(impl));
  }
  return names;
}

namespace {

/** `judge` with a measured backend's bare name (`cpu`) spelled out: `measured:impl=cpu`. */
std::string expand_backend(const std::string& judge) {
  const std::vector<std::string> impls = cost_model_registry().choices("measured", "impl");
  const bool backend = std::find(impls.begin(), impls.end(), judge) != impls.end();
  return backend ? "measured:impl=" + judge : judge;
}

}  // namespace

std::string judge_spec(const std::string& judge) {
  const std::string expanded = expand_backend(judge);
  const Spec parsed = parse_spec(expanded);
  std::string models;
  bool known = false;
  for (const RegistryEntryInfo& entry : cost_model_registry().list()) {
    models += (models.empty() ? "" : ", ") + entry.name;
    known = known || entry.name == parsed.name;
  }
  EMBSHARD_CHECK(known, "eval: unknown judge '", parsed.name, "' (available: ", backend_list(),
                 "; or a cost-model spec: ", models, ")");
  std::string canonical;
  try {
    canonical = cost_model_registry().canonical(expanded);
  } catch (const Error& e) {
    EMBSHARD_THROW("eval: judge '", judge, "': ", e.what());
  }
  const Spec spec = parse_spec(canonical);
  if (spec.name == "measured") {  // the registry knows every kernel; this build may lack one
    const std::string impl = detail::measured_options_of(canonical).impl;
    const std::vector<std::string> built = eval_backends();
    EMBSHARD_CHECK(std::find(built.begin(), built.end(), impl) != built.end(), "eval: backend '", impl,
                   "' is not available: embshard was built without ", impl == "cuda" ? "CUDA" : impl,
                   "; available: ", backend_list());
  }
  return canonical;
}

std::string set_judge_value(const std::string& judge, const std::string& key, const std::string& value) {
  Spec spec = parse_spec(expand_backend(judge));
  const CostModelRegistry& registry = cost_model_registry();
  bool declared = false;
  for (const RegistryEntryInfo& entry : registry.list()) {
    if (entry.name != spec.name) continue;
    for (const ParamSpec& p : entry.params) declared = declared || p.name == key;
  }
  if (!declared) return judge;
  set_spec_value(spec, key, value);
  return format_spec(spec);
}

std::string with_judge_default(const std::string& judge, const std::string& key, const std::string& value) {
  for (const auto& pair : parse_spec(expand_backend(judge)).pairs) {
    if (pair.first == key) return judge;
  }
  return set_judge_value(judge, key, value);
}

InputCommOptions judge_input_comm(const std::string& judge) {
  const Spec spec = parse_spec(judge_spec(judge));
  const std::vector<ParamSpec> declared = with_input_comm_params({});
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& pair : spec.pairs) {
    for (const ParamSpec& p : declared)
      if (p.name == pair.first) pairs.push_back(pair);
  }
  return input_comm_options(bind_params(spec.name, declared, pairs));
}

std::unique_ptr<CostModel> make_judge(const Task& task, const std::string& judge, const Context& ctx) {
  const std::string spec = judge_spec(judge);
  try {
    return make_cost_model(spec, task, ctx);
  } catch (const Error& e) {
    EMBSHARD_THROW("eval: ", e.what());
  }
}

namespace {

/** A measured batch for `plan`: the global `batch` (0: the task's), of which a 2D plan's group
 *  runs its share G / N. */
std::int64_t group_batch(const Task& task, const Plan& plan, std::int64_t batch) {
  if (!plan.groups.enabled() || batch <= 0) return batch;
  return std::max<std::int64_t>(1, batch * plan.groups.size / task.topology.num_devices());
}

}  // namespace

std::string group_judge(const Task& task, const Plan& plan, const std::string& judge) {
  if (!plan.groups.enabled()) return judge;
  const std::int64_t batch = detail::measured_options_of(judge_spec(judge)).batch;
  return set_judge_value(judge, "batch", std::to_string(group_batch(task, plan, batch)));
}

EvalResult evaluate_plan(const Task& task, const Plan& plan, const std::string& judge, const Context& ctx,
                         std::span<const DeviceTiming> measured_comm) {
  const double start_ms = now_ms();
  check_task(task, "eval: task");
  const std::string plan_error = find_error_in_plan(task, plan);
  EMBSHARD_CHECK(plan_error.empty(), "eval: the plan does not fit the task: ", plan_error);
  // A 2D plan is judged per sharding group (plan/sharding_groups.h): the judge is built for the
  // group's task and a measured batch is the global one, of which the group runs its share.
  const std::optional<Task> group =
      plan.groups.enabled() ? std::optional(sharding_group_task(task, plan.groups)) : std::nullopt;
  const Task& costed = group ? *group : task;
  EMBSHARD_CHECK(measured_comm.empty() || !group,
                 "eval: measured all-to-alls cannot judge a 2D plan (its exchanges run "
                 "inside each sharding group); judge it with the link model");
  const auto model = make_judge(costed, group_judge(task, plan, judge), ctx);
  const std::int64_t batch_size = model->batch_size(costed);
  CostBreakdown breakdown = model->estimate(task, plan, ctx);
  if (!measured_comm.empty()) fill_measured_comm(measured_comm, judge_input_comm(judge).mode, breakdown);
  EvalResult result = eval_result_of(std::move(breakdown), batch_size, model->spec());
  result.lookups = tier_lookups(costed, plan, batch_size);
  result.wall_ms = now_ms() - start_ms;
  return result;
}

std::vector<DeviceLookups> measured_tier_lookups(const Task& task, const Plan& plan, const std::string& judge) {
  check_task(task, "eval: task");
  const std::string plan_error = find_error_in_plan(task, plan);
  EMBSHARD_CHECK(plan_error.empty(), "eval: the plan does not fit the task: ", plan_error);
  const std::optional<Task> group =
      plan.groups.enabled() ? std::optional(sharding_group_task(task, plan.groups)) : std::nullopt;
  const Task& costed = group ? *group : task;
  const detail::MeasuredOptions options = detail::measured_options_of(judge_spec(judge));
  const std::int64_t batch_size = detail::measured_batch_size(costed, group_batch(task, plan, options.batch));
  detail::MeasuredShards measured(costed);
  const auto by_device = shards_by_device(costed, plan);
  std::vector<DeviceLookups> out(by_device.size());
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    // The device's shards at the whole batch, its data-parallel copies at their share (all HBM).
    const detail::DeviceCalls calls = detail::device_calls(by_device[d], batch_size);
    for (const auto& [shards, batch] :
         {std::pair{&calls.shards, batch_size}, std::pair{&calls.copies, calls.copy_batch}}) {
      if (shards->empty()) continue;
      std::vector<ShardTableSpec> specs = measured.specs(costed, *shards, batch, options.draw, options.remap_held_out);
      std::vector<std::int64_t> hbm_rows;
      for (const ShardTableSpec& spec : specs) hbm_rows.push_back(spec.hbm_rows);
      const ShardTimer bench(std::move(specs), batch, options.draw, kernels::EmbeddingBagImpl::kReference);
      for (std::size_t t = 0; t < hbm_rows.size(); ++t) {
        for (const std::int32_t row : bench.table_lookups(t)) {
          (hbm_rows[t] < 0 || row < hbm_rows[t] ? out[d].hbm : out[d].uvm) += 1.0;
        }
      }
    }
  }
  return out;
}

EvalResult eval_result_of(CostBreakdown breakdown, std::int64_t batch_size, std::string backend) {
  EvalResult result;
  result.breakdown = std::move(breakdown);
  result.batch_size = batch_size;
  result.backend = std::move(backend);
  result.step_ms = objective_value(result.breakdown, Objective::kStep);
  result.max_sum_ms = objective_value(result.breakdown, Objective::kMaxSum);
  result.balance = objective_value(result.breakdown, Objective::kBalance);
  return result;
}

PlanJudge plan_judge(const std::string& judge, const Task& reference_task) {
  const auto model = make_judge(reference_task, judge);  // an unknown backend fails here
  PlanJudge j;
  j.backend = model->spec();
  j.batch_size = model->batch_size(reference_task);
  j.measures = model->measures();
  j.judge = [spec = judge_spec(judge)](const Task& task, const Plan& plan, std::uint64_t draw, const Context& ctx) {
    return evaluate_plan(task, plan, set_judge_value(spec, "draw", std::to_string(draw)), ctx).breakdown;
  };
  return j;
}

std::string eval_result_json(const EvalResult& r, const Task& task, const Plan& plan) {
  Json devices = Json::array();
  for (std::size_t d = 0; d < r.breakdown.devices.size(); ++d) {
    const DeviceCost& c = r.breakdown.devices[d];
    Json device = {{"device", d},
                   {"in_comm_ms", c.in_comm_ms},
                   {"in_hidden_ms", c.in_hidden_ms},
                   {"fw_comp_ms", c.fw_comp_ms},
                   {"fw_comm_ms", c.fw_comm_ms},
                   {"fw_wait_ms", c.fw_wait_ms},
                   {"bw_comm_ms", c.bw_comm_ms},
                   {"bw_comp_ms", c.bw_comp_ms},
                   {"ar_comm_ms", c.ar_comm_ms},
                   {"sum_ms", c.sum_ms()},
                   {"hbm_bytes", c.hbm_bytes},
                   {"uvm_bytes", c.uvm_bytes}};
    if (d < r.lookups.size()) {
      device["hbm_lookups"] = r.lookups[d].hbm;
      device["uvm_lookups"] = r.lookups[d].uvm;
    }
    devices.push_back(std::move(device));
  }
  auto spread_json = [](const Spread& s) {
    return Json{{"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"std", s.stddev}};
  };
  Json doc;
  doc["task_id"] = task.id;
  doc["plan_sharder"] = plan.provenance.sharder;
  doc["backend"] = r.backend;
  doc["batch_size"] = r.batch_size;
  doc["compute"] = {{"source", to_string(r.breakdown.compute_source)}, {"detail", r.breakdown.compute_detail}};
  doc["comm"] = {{"source", to_string(r.breakdown.comm_source)}, {"detail", r.breakdown.comm_detail}};
  doc["objectives"] = {{"step_ms", r.step_ms}, {"max_sum_ms", r.max_sum_ms}, {"balance", r.balance}};
  if (plan.groups.enabled())  // "devices" are then the ranks of one group, batch_size the group's
    doc["sharding_groups"] = {{"size", plan.groups.size}, {"ranks", to_string(plan.groups.ranks)}};
  doc["devices"] = devices;
  doc["device_spread"] = {{"comp_ms", spread_json(compute_spread(r))}, {"sum_ms", spread_json(step_spread(r))}};
  if (!r.lookups.empty()) {
    const DeviceLookups total = total_lookups(r);
    doc["lookups"] = {{"hbm_per_step", total.hbm}, {"uvm_per_step", total.uvm}, {"uvm_share", uvm_lookup_share(r)}};
  }
  doc["wall_ms"] = r.wall_ms;
  return doc.dump(2) + "\n";
}

std::string eval_result_table(const EvalResult& r, const Topology& topology) {
  std::ostringstream out;
  char line[200];
  const bool any_uvm = std::any_of(r.breakdown.devices.begin(), r.breakdown.devices.end(),
                                   [](const DeviceCost& c) { return c.uvm_bytes > 0; });
  std::snprintf(line, sizeof line, "%6s %10s %10s %10s %10s %10s %10s %10s  %s\n", "device", "in_comm", "fw_comp",
                "fw_comm", "fw_wait", "bw_comm", "bw_comp", "sum_ms",
                any_uvm ? "HBM GiB used / budget   UVM GiB used / budget" : "HBM GiB used / budget");
  out << line;
  const auto gib = [](std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 30); };
  for (std::size_t d = 0; d < r.breakdown.devices.size(); ++d) {
    const DeviceCost& c = r.breakdown.devices[d];
    const Device* device = d < topology.devices.size() ? &topology.devices[d] : nullptr;
    const double hbm_budget = device ? gib(device->hbm_bytes) : 0.0;
    const double uvm_budget = device ? gib(device->uvm_bytes) : 0.0;
    const int n = std::snprintf(
        line, sizeof line, "%6zu %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f  %8.2f / %6.2f", d, c.in_comm_ms,
        c.fw_comp_ms, c.fw_comm_ms, c.fw_wait_ms, c.bw_comm_ms, c.bw_comp_ms, c.sum_ms(), gib(c.hbm_bytes), hbm_budget);
    if (any_uvm && n > 0 && static_cast<std::size_t>(n) < sizeof line) {
      std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), "     %8.2f / %.2f", gib(c.uvm_bytes),
                    uvm_budget);
    }
    out << line << '\n';
  }
  if (r.breakdown.groups.enabled()) {  // a 2D plan: per rank of a group, ar_comm is its replica sync
    double lo = 0.0, hi = 0.0;
    for (std::size_t d = 0; d < r.breakdown.devices.size(); ++d) {
      const double ms = r.breakdown.devices[d].ar_comm_ms;
      lo = d == 0 ? ms : std::min(lo, ms);
      hi = std::max(hi, ms);
    }
    std::snprintf(line, sizeof line,
                  "2D plan, sharding groups of %d ranks (%s): the rows are one group's ranks; replica sync "
                  "%.3f to %.3f ms per step (in sum_ms)\n",
                  r.breakdown.groups.size, to_string(r.breakdown.groups.ranks), lo, hi);
    out << line;
  } else if (!r.breakdown.devices.empty() && r.breakdown.devices.front().ar_comm_ms > 0.0) {
    std::snprintf(line, sizeof line,
                  "gradient all-reduce of the data-parallel tables: %.3f ms on every device (in sum_ms)\n",
                  r.breakdown.devices.front().ar_comm_ms);
    out << line;
  }
  if (!r.lookups.empty()) {
    out << "lookups per step (expected from the task's statistics):\n";
    std::snprintf(line, sizeof line, "%6s %14s %14s %9s\n", "device", "hbm", "uvm", "uvm_%");
    out << line;
    for (std::size_t d = 0; d < r.lookups.size(); ++d) {
      const DeviceLookups& l = r.lookups[d];
      std::snprintf(line, sizeof line, "%6zu %14.0f %14.0f %9.3f\n", d, l.hbm, l.uvm,
                    l.hbm + l.uvm > 0 ? 100.0 * l.uvm / (l.hbm + l.uvm) : 0.0);
      out << line;
    }
    std::snprintf(line, sizeof line, "uvm_share %.4f%% of all lookups\n", 100.0 * uvm_lookup_share(r));
    out << line;
  }
  double hidden = 0.0;
  for (const DeviceCost& c : r.breakdown.devices) hidden = std::max(hidden, c.in_hidden_ms);
  if (hidden > 0.0) {
    std::snprintf(line, sizeof line,
                  "input all-to-all hidden under the previous step's compute: up to %.3f ms per device\n", hidden);
    out << line;
  }
  const Spread comp = compute_spread(r);
  std::snprintf(line, sizeof line, "per-device fw_comp+bw_comp ms: min %.3f max %.3f mean %.3f std %.3f\n", comp.min,
                comp.max, comp.mean, comp.stddev);
  out << line;
  const Spread step = step_spread(r);
  std::snprintf(line, sizeof line, "per-device step (sum_ms):      min %.3f max %.3f mean %.3f std %.3f\n", step.min,
                step.max, step.mean, step.stddev);
  out << line;
  out << "compute: " << to_string(r.breakdown.compute_source) << " (" << r.breakdown.compute_detail
      << ")\ncomm:    " << to_string(r.breakdown.comm_source) << " (" << r.breakdown.comm_detail << ")\n";
  std::snprintf(line, sizeof line, "step_ms %.3f  max_sum_ms %.3f  balance %.3f  (batch %lld)\n", r.step_ms,
                r.max_sum_ms, r.balance, static_cast<long long>(r.batch_size));
  out << line << "(every figure is defined in docs/metrics.md)\n";
  return out.str();
}

}  // namespace embshard
