#pragma once
/**
 * @file placement.h
 * @brief The placement episode both RL sharders act in (DreamShard's estimated MDP, AutoShard's
 *        environment): whole tables placed one at a time, in a fixed order, onto devices.
 *
 * Papers 002 §3.1 and 001 §4.1; refs-zha.md §5.2–5.3. An episode starts with every device empty
 * and the task's tables in `order` (the sharders sort them by predicted cost, largest first). Each
 * step puts the next table on a device. A device is *legal* for the next table when its HBM
 * budget still holds the table's weights (`TableSpec::size_bytes`, the task's precision) — the
 * same rule as the greedy baselines. DreamShard acts only on legal devices; AutoShard's training
 * lets the policy pick any device and penalises an overfull plan in the reward (`overflow`).
 *
 * Nothing here is learned: the networks that score devices live in dreamshard_policy.h and
 * autoshard_policy.h; training (src/learn) and inference (src/shard) step the same state.
 */
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "embshard/data/random.h"
#include "embshard/data/task.h"
#include "embshard/plan/plan.h"

namespace embshard {

class PlacementState {
 public:
  /** An empty placement of `task`'s tables in `order` (a permutation of 0..T−1; checked). */
  PlacementState(const Task& task, std::vector<int> order);

  [[nodiscard]] const Task& task() const { return *task_; }
  [[nodiscard]] int num_devices() const { return static_cast<int>(device_tables_.size()); }
  [[nodiscard]] int num_tables() const { return static_cast<int>(order_.size()); }
  [[nodiscard]] const std::vector<int>& order() const { return order_; }
  /** Tables placed so far (the step number). */
  [[nodiscard]] int placed() const { return step_; }
  [[nodiscard]] bool done() const { return step_ == num_tables(); }
  /** Task index of the table to place next (not done()). */
  [[nodiscard]] int next_table() const;

  /** Whether the next table fits `device`'s remaining HBM. */
  [[nodiscard]] bool legal(int device) const;
  /** The legal devices for the next table, ascending (empty: it fits nowhere). */
  [[nodiscard]] std::vector<int> legal_devices() const;
  /** Puts the next table on `device` (any device; legality is the caller's choice). */
  void place(int device);

  /** Task indices of the tables on `device`, in placement order. */
  [[nodiscard]] const std::vector<int>& tables_on(int device) const { return device_tables_[device]; }
  /** Weight bytes on `device`. */
  [[nodiscard]] std::int64_t bytes_on(int device) const { return device_bytes_[device]; }
  /** max over devices of (bytes − HBM budget) / budget, or 0 when every device fits. */
  [[nodiscard]] double overflow() const;
  /** Device of every task table (−1: not placed yet). */
  [[nodiscard]] const std::vector<int>& devices() const { return device_of_; }
  /** Why the next table has no legal device (for an infeasible status): names it and its bytes. */
  [[nodiscard]] std::string no_room_reason() const;
  /** The table-wise plan of a finished episode. */
  [[nodiscard]] Plan plan() const;

 private:
  const Task* task_;
  std::vector<int> order_;
  int step_ = 0;
  std::vector<std::vector<int>> device_tables_;
  std::vector<std::int64_t> device_bytes_;
  std::vector<int> device_of_;
};

/** Indices 0..n−1 sorted by `cost` descending (ties: lower index first). */
[[nodiscard]] std::vector<int> order_by_cost_descending(const std::vector<double>& cost);

/** A device drawn from softmax(logits) over `allowed` (all devices when empty). */
[[nodiscard]] int sample_softmax(std::span<const float> logits, std::span<const int> allowed, Rng& rng);
/** The highest-logit device among `allowed` (non-empty; ties: the first). */
[[nodiscard]] int argmax_of(std::span<const float> logits, std::span<const int> allowed);

}  // namespace embshard
