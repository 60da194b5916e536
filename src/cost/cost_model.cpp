#include "embshard/cost/cost_model.h"

#include <algorithm>

#include "embshard/core/error.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/link_model.h"

namespace embshard {
namespace {

class SimCostModel final : public CostModel {
 public:
  explicit SimCostModel(const Task& task)
      : hardware_(sim_hardware_for(task.topology)), compute_(make_sim_model(task.topology)) {}

  [[nodiscard]] std::string spec() const override { return "sim"; }

  [[nodiscard]] CostBreakdown estimate(const Task& task, const Plan& plan,
                                       const Context& ctx) override {
    return assemble_breakdown(task, plan, *compute_, task.workload.batch_size, ctx);
  }

  [[nodiscard]] std::optional<double> lower_bound(const Task& task,
                                                  Objective objective) const override {
    return sim_lower_bound(task, hardware_, objective);
  }

 private:
  SimHardware hardware_;
  std::unique_ptr<ComputeModel> compute_;
};

}  // namespace

CostBreakdown assemble_breakdown(const Task& task, const Plan& plan, ComputeModel& compute,
                                 std::int64_t batch_size, const Context& ctx) {
  const auto by_device = shards_by_device(task, plan);
  const auto memory = plan_memory(task, plan);
  CostBreakdown b;
  b.devices.resize(by_device.size());
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    const DeviceCompute c = compute.device_compute(task, by_device[d], ctx);
    b.devices[d].fw_comp_ms = c.fw_ms;
    b.devices[d].bw_comp_ms = c.bw_ms;
    b.devices[d].hbm_bytes = memory[d].hbm_bytes;
    b.devices[d].uvm_bytes = memory[d].uvm_bytes;
  }
  b.compute_source = compute.source();
  b.compute_detail = compute.detail();
  const std::vector<double> a2a_ms = all_to_all_ms(task.topology, device_dim_sums(by_device), batch_size);
  for (std::size_t d = 0; d < a2a_ms.size(); ++d) {
    b.devices[d].fw_comm_ms = a2a_ms[d];
    b.devices[d].bw_comm_ms = a2a_ms[d];  // the symmetric link model (link_model.h)
  }
  b.comm_source = CostSource::kModelled;
  b.comm_detail = detail::concat("link model of ", task.topology.name, " at batch ", batch_size);
  fill_straggler_wait(b);
  return b;
}

std::unique_ptr<CostModel> make_cost_model(const std::string& spec, const Task& task) {
  EMBSHARD_CHECK(spec == "sim", "unknown cost model '", spec, "'; known: sim");
  return std::make_unique<SimCostModel>(task);
}

}  // namespace embshard
