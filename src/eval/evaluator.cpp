#include "embshard/eval/evaluator.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
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

void fill_measured_comm(std::span<const DeviceTiming> measured, CostBreakdown& breakdown) {
  EMBSHARD_CHECK(measured.size() == breakdown.devices.size(), "eval: ", measured.size(),
                 " measured all-to-alls for ", breakdown.devices.size(), " devices");
  for (std::size_t d = 0; d < measured.size(); ++d) {
    breakdown.devices[d].fw_comm_ms = measured[d].fw_ms;
    breakdown.devices[d].bw_comm_ms = measured[d].bw_ms;
  }
  breakdown.comm_source = CostSource::kMeasured;
  breakdown.comm_detail = detail::concat("MPI all-to-all, one rank per device (", measured.size(),
                                         " ranks)");
}

}  // namespace

std::int64_t eval_batch_size(const Task& task, const EvalOptions& options) {
  return options.backend != "sim" && options.batch_size > 0 ? options.batch_size
                                                              : task.workload.batch_size;
}

std::vector<std::string> eval_backends() {
  std::vector<std::string> names{"sim"};
  for (kernels::EmbeddingBagImpl impl : kernels::embedding_bag_impls()) {
    names.emplace_back(kernels::to_string(impl));
  }
  return names;
}

std::unique_ptr<ComputeModel> make_compute_model(const Task& task, const EvalOptions& options) {
  if (options.backend == "sim") return make_sim_model(task.topology);
  const std::string problem = find_error_in_measure_options(options.measure);
  EMBSHARD_CHECK(problem.empty(), "eval: ", problem);
  EMBSHARD_CHECK(options.batch_size >= 0, "eval: batch size must be positive");
  for (kernels::EmbeddingBagImpl impl : kernels::embedding_bag_impls()) {
    if (options.backend != kernels::to_string(impl)) continue;
    EMBSHARD_CHECK(impl != kernels::EmbeddingBagImpl::kCuda || kernels::cuda_device_available(),
                   "eval: backend 'cuda' is built but no GPU is visible");
    return detail::make_measured_model(task, impl, options);
  }
  if (options.backend == "cuda") {
    EMBSHARD_THROW("eval: backend 'cuda' is not available: embshard was built without CUDA; "
                   "available: ", backend_list());
  }
  EMBSHARD_THROW("eval: unknown backend '", options.backend, "' (available: ", backend_list(), ")");
}

EvalResult evaluate_plan(const Task& task, const Plan& plan, const EvalOptions& options,
                         const Context& ctx, std::span<const DeviceTiming> measured_comm) {
  const double start_ms = now_ms();
  check_task(task, "eval: task");
  const std::string plan_error = find_error_in_plan(task, plan);
  EMBSHARD_CHECK(plan_error.empty(), "eval: the plan does not fit the task: ", plan_error);
  auto model = make_compute_model(task, options);
  const std::int64_t batch_size = eval_batch_size(task, options);
  const auto link = make_link_comm_model(task.topology, batch_size);
  CostBreakdown breakdown = assemble_breakdown(task, plan, *model, *link, ctx);
  if (!measured_comm.empty()) fill_measured_comm(measured_comm, breakdown);
  EvalResult result = eval_result_of(std::move(breakdown), batch_size, model->spec());
  result.wall_ms = now_ms() - start_ms;
  return result;
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

std::string eval_result_json(const EvalResult& r, const Task& task, const Plan& plan) {
  Json devices = Json::array();
  for (std::size_t d = 0; d < r.breakdown.devices.size(); ++d) {
    const DeviceCost& c = r.breakdown.devices[d];
    devices.push_back({{"device", d},
                       {"fw_comp_ms", c.fw_comp_ms},
                       {"fw_comm_ms", c.fw_comm_ms},
                       {"fw_wait_ms", c.fw_wait_ms},
                       {"bw_comm_ms", c.bw_comm_ms},
                       {"bw_comp_ms", c.bw_comp_ms},
                       {"sum_ms", c.sum_ms()},
                       {"hbm_bytes", c.hbm_bytes},
                       {"uvm_bytes", c.uvm_bytes}});
  }
  Json doc;
  doc["task_id"] = task.id;
  doc["plan_sharder"] = plan.provenance.sharder;
  doc["backend"] = r.backend;
  doc["batch_size"] = r.batch_size;
  doc["compute"] = {{"source", to_string(r.breakdown.compute_source)},
                    {"detail", r.breakdown.compute_detail}};
  doc["comm"] = {{"source", to_string(r.breakdown.comm_source)}, {"detail", r.breakdown.comm_detail}};
  doc["objectives"] = {{"step_ms", r.step_ms}, {"max_sum_ms", r.max_sum_ms}, {"balance", r.balance}};
  doc["devices"] = devices;
  doc["wall_ms"] = r.wall_ms;
  return doc.dump(2) + "\n";
}

std::string eval_result_table(const EvalResult& r) {
  std::ostringstream out;
  char line[160];
  std::snprintf(line, sizeof line, "%6s %10s %10s %10s %10s %10s %10s %9s\n", "device", "fw_comp",
                "fw_comm", "fw_wait", "bw_comm", "bw_comp", "sum_ms", "mem_GiB");
  out << line;
  for (std::size_t d = 0; d < r.breakdown.devices.size(); ++d) {
    const DeviceCost& c = r.breakdown.devices[d];
    std::snprintf(line, sizeof line, "%6zu %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %9.3f\n", d,
                  c.fw_comp_ms, c.fw_comm_ms, c.fw_wait_ms, c.bw_comm_ms, c.bw_comp_ms, c.sum_ms(),
                  static_cast<double>(c.hbm_bytes + c.uvm_bytes) / (1 << 30));
    out << line;
  }
  out << "compute: " << to_string(r.breakdown.compute_source) << " (" << r.breakdown.compute_detail
      << ")\ncomm:    " << to_string(r.breakdown.comm_source) << " (" << r.breakdown.comm_detail
      << ")\n";
  std::snprintf(line, sizeof line, "step_ms %.3f  max_sum_ms %.3f  balance %.3f  (batch %lld)\n",
                r.step_ms, r.max_sum_ms, r.balance, static_cast<long long>(r.batch_size));
  out << line;
  return out.str();
}

}  // namespace embshard
