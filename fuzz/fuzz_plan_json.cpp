// Fuzz target: plan JSON parsing, then plan checking against a small fixed task.
// Only embshard::Error may escape the parser; find_error_in_plan must never throw.
#include <cstddef>
#include <cstdint>
#include <string>

#include "embshard/core/error.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/plan_io.h"

namespace {

embshard::Task make_fixed_task() {
  embshard::Task task;
  task.id = "fuzz";
  const struct {
    const char* name;
    std::int64_t rows;
    int dim;
    embshard::WeightType dtype;
  } shapes[] = {{"t0", 1000, 64, embshard::WeightType::kF32},
                {"t1", 500, 32, embshard::WeightType::kF16},
                {"t2", 100, 8, embshard::WeightType::kF32}};
  for (const auto& s : shapes) {
    embshard::TableSpec t;
    t.name = s.name;
    t.dim = s.dim;
    t.dtype = s.dtype;
    t.stats.num_rows = s.rows;
    task.workload.tables.push_back(t);
  }
  embshard::Device device;
  device.hbm_bytes = 200000;
  device.uvm_bytes = 1000000;
  device.hbm_gbps = 1000.0;
  device.uvm_gbps = 50.0;
  task.topology.name = "custom";
  task.topology.devices.assign(4, device);
  task.topology.devices_per_host = 2;
  task.constraints.allow_uvm = true;
  return task;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const embshard::Task task = make_fixed_task();
  const std::string text(reinterpret_cast<const char*>(data), size);
  embshard::Plan plan;
  try {
    plan = embshard::plan_from_json(text, "fuzz.json");
  } catch (const embshard::Error&) {
    return 0;
  }
  const std::string error = embshard::find_error_in_plan(task, plan);
  (void)embshard::plan_memory(task, plan);
  if (error.empty()) {
    // A valid plan must survive a write/read round trip unchanged.
    const std::string again =
        embshard::plan_to_json(embshard::plan_from_json(embshard::plan_to_json(plan), "fuzz.json"));
    if (again != embshard::plan_to_json(plan)) __builtin_trap();
  }
  return 0;
}
