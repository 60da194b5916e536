// The placement episode of the RL sharders (placement.h).
#include "embshard/policy/placement.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "embshard/core/error.h"

namespace embshard {

PlacementState::PlacementState(const Task& task, std::vector<int> order) : task_(&task), order_(std::move(order)) {
  const std::size_t tables = task.workload.tables.size();
  std::vector<int> sorted = order_;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> expected(tables);
  std::iota(expected.begin(), expected.end(), 0);
  EMBSHARD_ASSERT(sorted == expected);
  const auto devices = static_cast<std::size_t>(task.topology.num_devices());
  device_tables_.resize(devices);
  device_bytes_.assign(devices, 0);
  device_of_.assign(tables, -1);
}

int PlacementState::next_table() const {
  EMBSHARD_ASSERT(!done());
  return order_[static_cast<std::size_t>(step_)];
}

bool PlacementState::legal(int device) const {
  const std::int64_t size = task_->workload.tables[static_cast<std::size_t>(next_table())].size_bytes();
  return device_bytes_[static_cast<std::size_t>(device)] + size <=
         task_->topology.devices[static_cast<std::size_t>(device)].hbm_bytes;
}

std::vector<int> PlacementState::legal_devices() const {
  std::vector<int> legal_ones;
  for (int d = 0; d < num_devices(); ++d) {
    if (legal(d)) legal_ones.push_back(d);
  }
  return legal_ones;
}

void PlacementState::place(int device) {
  EMBSHARD_ASSERT(device >= 0 && device < num_devices());
  const int table = next_table();
  device_tables_[static_cast<std::size_t>(device)].push_back(table);
  device_bytes_[static_cast<std::size_t>(device)] +=
      task_->workload.tables[static_cast<std::size_t>(table)].size_bytes();
  device_of_[static_cast<std::size_t>(table)] = device;
  ++step_;
}

double PlacementState::overflow() const {
  double worst = 0.0;
  for (int d = 0; d < num_devices(); ++d) {
    const auto budget = static_cast<double>(task_->topology.devices[static_cast<std::size_t>(d)].hbm_bytes);
    const double over =
        (static_cast<double>(device_bytes_[static_cast<std::size_t>(d)]) - budget) / std::max(budget, 1.0);
    worst = std::max(worst, over);
  }
  return worst;
}

std::string PlacementState::no_room_reason() const {
  const TableSpec& t = task_->workload.tables[static_cast<std::size_t>(next_table())];
  return detail::concat("table '", t.name, "' (", t.size_bytes(), " bytes) fits on none of the ", num_devices(),
                        " devices after ", placed(), " tables were placed");
}

Plan PlacementState::plan() const {
  EMBSHARD_ASSERT(done());
  return table_wise_plan(*task_, device_of_);
}

std::vector<int> order_by_cost_descending(const std::vector<double>& cost) {
  std::vector<int> order(cost.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cost[static_cast<std::size_t>(a)] > cost[static_cast<std::size_t>(b)]; });
  return order;
}

int sample_softmax(std::span<const float> logits, std::span<const int> allowed, Rng& rng) {
  std::vector<int> all;
  if (allowed.empty()) {
    for (int d = 0; d < static_cast<int>(logits.size()); ++d) all.push_back(d);
    allowed = all;
  }
  float top = -INFINITY;
  for (int d : allowed) top = std::max(top, logits[static_cast<std::size_t>(d)]);
  double total = 0.0;
  for (int d : allowed) total += std::exp(double{logits[static_cast<std::size_t>(d)]} - top);
  double u = rng.uniform() * total;
  for (int d : allowed) {
    u -= std::exp(double{logits[static_cast<std::size_t>(d)]} - top);
    if (u <= 0) return d;
  }
  return allowed.back();
}

int argmax_of(std::span<const float> logits, std::span<const int> allowed) {
  EMBSHARD_ASSERT(!allowed.empty());
  int best = allowed.front();
  for (int d : allowed) {
    if (logits[static_cast<std::size_t>(d)] > logits[static_cast<std::size_t>(best)]) best = d;
  }
  return best;
}

}  // namespace embshard
