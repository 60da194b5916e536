#include "embshard/cost/cost_model.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "embshard/core/error.h"
#include "embshard/core/progress.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/link_model.h"
#include "embshard/cost/machine_calibration.h"

namespace embshard {
namespace {

/** The coefficients file `params` names; for `builtin` on cpu devices, this machine's installed
 *  calibration where there is one (cost/machine_calibration.h); "" for the built-in ones. */
std::string builtin_coefficients_file(const Task& task) {
  if (task.topology.device_kind != "cpu") return "";
  return installed_calibration_of_this_machine().value_or("");
}

std::string coefficients_file(const Task& task, const Params& params) {
  const std::string& file = params.get_string("coefficients");
  return file == "builtin" ? builtin_coefficients_file(task) : file;
}

/** The built-in coefficients of the task's preset (file ""), or a file's for its device kind. */
SimHardware sim_hardware_of(const Task& task, const std::string& file) {
  if (file.empty()) return sim_hardware_for(task.topology);
  auto [hardware, device_kind] = read_sim_hardware_file(file);
  EMBSHARD_CHECK(device_kind == task.topology.device_kind, "sim: ", file, " holds coefficients for '", device_kind,
                 "' devices but the task's topology has '", task.topology.device_kind, "' devices");
  return hardware;
}

class SimCostModel final : public CostModel {
 public:
  SimCostModel(const Task& task, const Params& params, const Context& ctx)
      : SimCostModel(task, params, coefficients_file(task, params), ctx) {}
  SimCostModel(const Task& task, const Params& params, const std::string& file, const Context& ctx)
      : SimCostModel(task.topology, task.workload.batch_size, sim_hardware_of(task, file), params) {
    file_ = file;
    if (hardware_.calibrated_on && params_.get_string("hardware") == "match") {
      warn_if_calibrated_elsewhere(*hardware_.calibrated_on, "sim's " + task.topology.device_kind + " coefficients",
                                   ctx);
    }
  }
  SimCostModel(const Topology& topology, std::int64_t batch_size, SimHardware hardware, Params params)
      : hardware_(std::move(hardware)), compute_(make_sim_model(hardware_)),
        comm_(make_link_comm_model(topology, batch_size, input_comm_options(params))), params_(std::move(params)),
        topology_(topology), batch_size_(batch_size) {}

  [[nodiscard]] std::unique_ptr<CostModel> clone() const override { return with(topology_, batch_size_); }
  [[nodiscard]] std::unique_ptr<CostModel> for_task(const Task& task) const override {
    return with(task.topology, task.workload.batch_size);
  }

  /** The canonical spec, naming the coefficients file in use (an installed calibration too). */
  [[nodiscard]] std::string spec() const override {
    Spec spec = parse_spec(canonical_spec("sim", params_));
    if (!file_.empty()) set_spec_value(spec, "coefficients", file_);
    return format_spec(spec);
  }
  [[nodiscard]] ComputeModel& compute() override { return *compute_; }
  [[nodiscard]] CommModel& comm() override { return *comm_; }

  [[nodiscard]] std::optional<double> lower_bound(const Task& task, Objective objective) const override {
    return sim_lower_bound(task, hardware_, objective, comm_->input_options());
  }

 private:
  SimHardware hardware_;
  std::unique_ptr<ComputeModel> compute_;
  std::unique_ptr<CommModel> comm_;
  /** This model with its coefficients for another topology and batch (its link model is rebuilt). */
  [[nodiscard]] std::unique_ptr<SimCostModel> with(const Topology& topology, std::int64_t batch_size) const {
    auto model = std::make_unique<SimCostModel>(topology, batch_size, hardware_, params_);
    model->file_ = file_;
    return model;
  }

  Params params_;
  std::string file_;   ///< the coefficients file in use; "" = the preset's built-in ones
  Topology topology_;  ///< of the task it was built for (clone builds its link model again)
  std::int64_t batch_size_;
};

/** Fills in_comm_ms / in_hidden_ms under the link model (cost/link_model.h), each device's input
 *  exchange paying `extra_ms` more (further exchange groups); needs fw/bw_comp. */
void add_input_comm(const Task& task, const std::vector<std::vector<PlacedShard>>& by_device,
                    const InputCommOptions& options, double extra_ms, CostBreakdown& b) {
  if (options.mode == InputCommMode::kOmit) return;
  std::vector<double> ms = input_all_to_all_ms(task.topology, device_input_bytes(task, by_device, options));
  for (double& m : ms) m += extra_ms;
  apply_input_comm(ms, options.mode, b);
}

}  // namespace

namespace {

/** assemble_breakdown of `plan`'s shards on `task`'s devices, its layout aside. */
CostBreakdown assemble_shards(const Task& task, const Plan& plan, ComputeModel& compute, CommModel& comm,
                              const Context& ctx) {
  const auto by_device = shards_by_device(task, plan);
  const auto memory = plan_memory(task, plan);
  CostBreakdown b;
  b.devices.resize(by_device.size());
  std::vector<double> fw_comp_ms(by_device.size());
  // Measured devices take seconds each: a live line (no final line; the caller reports the result).
  std::optional<Progress> progress;
  if (compute.source() == CostSource::kMeasured) {
    progress.emplace(ctx, "measuring " + compute.spec() + ": devices", static_cast<std::int64_t>(by_device.size()));
  }
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    if (progress) progress->advance(0);
    const DeviceCompute c = compute.device_compute(task, by_device[d], ctx);
    if (progress) progress->advance();
    b.devices[d].fw_comp_ms = fw_comp_ms[d] = c.fw_ms;
    b.devices[d].bw_comp_ms = c.bw_ms;
    b.devices[d].hbm_bytes = memory[d].hbm_bytes;
    b.devices[d].uvm_bytes = memory[d].uvm_bytes;
  }
  b.compute_source = compute.source();
  b.compute_detail = compute.detail();
  const std::vector<DeviceComm> a2a = comm.device_comm(task, device_output_dims(task, by_device), fw_comp_ms);
  EMBSHARD_ASSERT(a2a.size() == b.devices.size());
  // Under per-type exchanges every further sharding type pays each exchange's latency again.
  const double extra_ms = extra_group_latency_ms(task.topology, comm.input_options(), exchange_groups(plan));
  for (std::size_t d = 0; d < a2a.size(); ++d) {
    b.devices[d].fw_comm_ms = a2a[d].fw_ms + extra_ms;
    b.devices[d].bw_comm_ms = a2a[d].bw_ms + extra_ms;
  }
  // Every device holds every data-parallel table: device 0's copies are all of them.
  const double ar_ms =
      by_device.empty() ? 0.0 : all_reduce_ms(task.topology, replica_gradient_bytes(task, by_device[0]));
  for (DeviceCost& c : b.devices) c.ar_comm_ms = ar_ms;
  add_input_comm(task, by_device, comm.input_options(), extra_ms, b);
  b.comm_source = CostSource::kModelled;
  b.comm_detail = comm.detail();
  fill_straggler_wait(b);
  return b;
}

}  // namespace

CostBreakdown assemble_breakdown(const Task& task, const Plan& plan, ComputeModel& compute, CommModel& comm,
                                 const Context& ctx) {
  if (!plan.groups.enabled()) return assemble_shards(task, plan, compute, comm, ctx);
  const Task group = sharding_group_task(task, plan.groups);
  CostBreakdown b = assemble_shards(group, plan, compute, comm, ctx);
  const auto by_rank = shards_by_device(group, plan);
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    b.devices[r].ar_comm_ms += replica_sync_ms(task.topology, plan.groups, task.workload.replica_sync_every,
                                               replica_sync_bytes(group, by_rank[r]));
  b.groups = plan.groups;
  b.comm_detail +=
      detail::concat("; ", describe_groups(plan.groups, task.topology.num_devices()), ", replicas synced every ",
                     task.workload.replica_sync_every, task.workload.replica_sync_every == 1 ? " step" : " steps");
  return b;
}

void apply_input_comm(std::span<const double> ms, InputCommMode mode, CostBreakdown& b) {
  EMBSHARD_ASSERT(ms.size() == b.devices.size());
  for (std::size_t d = 0; d < b.devices.size(); ++d) {
    DeviceCost& c = b.devices[d];
    const double raw = mode == InputCommMode::kOmit ? 0.0 : ms[d];
    const double hidden = mode == InputCommMode::kOverlap ? std::min(raw, c.fw_comp_ms + c.bw_comp_ms) : 0.0;
    c.in_comm_ms = raw - hidden;
    c.in_hidden_ms = hidden;
  }
}

ParamSpec hardware_param(const std::string& what) {
  return {"hardware",
          ParamType::kString,
          "match",
          {},
          {},
          {"match", "any"},
          "require " + what + " trained on the task's kind of device (match) or not (any)"};
}

void warn_if_calibrated_elsewhere(const HardwareFingerprint& calibrated_on, const std::string& what,
                                  const Context& ctx) {
  if (calibrated_on.device_kind != "cpu") return;
  const HardwareFingerprint& here = this_cpu();
  if (here.cpu_model == calibrated_on.cpu_model && here.llc_bytes == calibrated_on.llc_bytes) return;
  const std::string message = detail::concat(
      what, " were measured on '", calibrated_on.cpu_model, "' (", calibrated_on.llc_bytes >> 20,
      " MiB last-level cache), this machine is '", here.cpu_model, "' (", here.llc_bytes >> 20,
      " MiB): its costs may differ; calibrate this machine with `embshard profile compute --out S.jsonl` and "
      "`embshard profile calibrate --samples S.jsonl --install`, which every cpu plan here then uses "
      "(hardware=any silences this)");
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(message).second) ctx.warn(message);
}

SimHardware builtin_sim_hardware(const Task& task) { return sim_hardware_of(task, builtin_coefficients_file(task)); }

void register_sim_cost_model(CostModelRegistry& registry) {
  const auto sim = [](const Params& p, const Context& ctx, const Task& task) -> std::unique_ptr<CostModel> {
    return std::make_unique<SimCostModel>(task, p, ctx);
  };
  static const std::vector<ParamSpec> params = with_input_comm_params(
      {{"coefficients",
        ParamType::kString,
        "builtin",
        {},
        {},
        {},
        "the preset's built-in coefficients, or a file from `embshard profile calibrate --samples S --out FILE`"},
       {"hardware",
        ParamType::kString,
        "match",
        {},
        {},
        {"match", "any"},
        "warn when coefficients measured on one CPU are used on another (match) or not (any)"}});
  registry.add({"sim", "the analytic model of the task's topology preset (cost/analytic.h) and its link model", params},
               sim);
  registry.add({"analytic", "another name of sim", params}, sim);
}

}  // namespace embshard
