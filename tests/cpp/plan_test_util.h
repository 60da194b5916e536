#pragma once
// Hand-built tasks and plans shared by the plan-level tests (validator, exporters).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "embshard/plan/plan.h"

namespace embshard::test_util {

struct TableShape {
  std::string name;
  std::int64_t rows;
  int dim;
  WeightType dtype = WeightType::kF32;
};

/** A task of `shapes` (statistics: rows only) on identical custom devices. */
inline Task task_of(const std::vector<TableShape>& shapes, int num_devices, std::int64_t hbm = std::int64_t{1} << 40,
                    std::int64_t uvm = std::int64_t{1} << 40, int devices_per_host = 1) {
  Task task;
  task.id = "test-task";
  for (const auto& s : shapes) {
    TableSpec t;
    t.name = s.name;
    t.dim = s.dim;
    t.dtype = s.dtype;
    t.stats.num_rows = s.rows;
    task.workload.tables.push_back(t);
  }
  Device device;
  device.hbm_bytes = hbm;
  device.uvm_bytes = uvm;
  device.hbm_gbps = 1000.0;
  device.uvm_gbps = 50.0;
  task.topology.name = "custom";
  task.topology.devices.assign(static_cast<std::size_t>(num_devices), device);
  task.topology.devices_per_host = devices_per_host;
  return task;
}

inline Shard shard(int device, std::int64_t row_begin, std::int64_t row_end, int col_begin, int col_end,
                   std::int64_t hbm_rows = -1) {
  Shard s;
  s.device = device;
  s.row_begin = row_begin;
  s.row_end = row_end;
  s.col_begin = col_begin;
  s.col_end = col_end;
  s.hbm_rows = hbm_rows;
  return s;
}

inline Plan plan_of(std::vector<TablePlacement> tables) {
  Plan plan;
  plan.tables = std::move(tables);
  return plan;
}

}  // namespace embshard::test_util
