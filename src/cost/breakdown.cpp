#include "embshard/cost/breakdown.h"

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard {
namespace {

template <class Part>
double max_over_devices(const CostBreakdown& b, Part part) {
  double best = 0.0;
  for (const DeviceCost& d : b.devices) best = std::max(best, part(d));
  return best;
}

}  // namespace

const char* to_string(CostSource source) { return source == CostSource::kMeasured ? "measured" : "modelled"; }

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::kStep: return "step";
    case Objective::kMaxSum: return "max_sum";
    case Objective::kBalance: return "balance";
  }
  return "?";
}

Objective parse_objective(const std::string& name) {
  for (Objective o : {Objective::kStep, Objective::kMaxSum, Objective::kBalance}) {
    if (name == to_string(o)) return o;
  }
  EMBSHARD_THROW("unknown objective '", name, "' (expected step, max_sum or balance)");
}

double objective_value(const CostBreakdown& b, Objective objective) {
  if (b.devices.empty()) return 0.0;
  switch (objective) {
    case Objective::kStep:
      return max_over_devices(b, [](const DeviceCost& d) { return d.in_comm_ms; }) +
             max_over_devices(b, [](const DeviceCost& d) { return d.fw_comp_ms; }) +
             max_over_devices(b, [](const DeviceCost& d) { return d.fw_comm_ms; }) +
             max_over_devices(b, [](const DeviceCost& d) { return d.bw_comm_ms; }) +
             max_over_devices(b, [](const DeviceCost& d) { return d.bw_comp_ms; }) +
             max_over_devices(b, [](const DeviceCost& d) { return d.ar_comm_ms; });
    case Objective::kMaxSum: return max_over_devices(b, [](const DeviceCost& d) { return d.sum_ms(); });
    case Objective::kBalance: {
      const auto compute = [](const DeviceCost& d) { return d.fw_comp_ms + d.bw_comp_ms; };
      const double most = max_over_devices(b, compute);
      if (most <= 0.0) return 1.0;
      double least = most;
      for (const DeviceCost& d : b.devices) least = std::min(least, compute(d));
      return least / most;
    }
  }
  return 0.0;
}

void fill_straggler_wait(CostBreakdown& b) {
  const double slowest = max_over_devices(b, [](const DeviceCost& d) { return d.fw_comp_ms; });
  for (DeviceCost& d : b.devices) d.fw_wait_ms = slowest - d.fw_comp_ms;
}

}  // namespace embshard
