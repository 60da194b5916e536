#pragma once
/**
 * @file fast_step.h
 * @brief The `step` objective of an additive compute model and the link model, kept up to date
 *        in O(devices per host + log devices) per changed device instead of O(devices) per query:
 *        what lets `joint` search thousands of devices (joint.h).
 *
 * Under the link model (cost/link_model.h) device d's exchange time is
 *   latency + max(intra(max(b_d·(h−1), H − b_d)), inter(max(b_d·(N−h), T − H)))
 * with b_d its bytes per peer, H its host's total, T the grand total and h its host's size. The
 * largest over a host's devices therefore depends only on the host's largest and smallest b and
 * its H, and the largest over all hosts on the largest such host term and the smallest H:
 *   max_d time_d = latency + max(max_h A_h, inter(T − min_h H_h)).
 * Per device the forward and backward compute are kept in max-trees. `value()` is bit for bit
 * what `objective_value(…, kStep)` gives for the same loads (the same expressions, in the same
 * order; addition is monotone, so max_d (latency + x_d) = latency + max_d x_d).
 */
#include <cstdint>
#include <vector>

#include "embshard/data/topology.h"

namespace embshard::detail::joint {

/** A max-tree with argmax over a fixed number of slots (all `initial` at first). */
class MaxTree {
 public:
  explicit MaxTree(int size = 0, double initial = 0.0);
  void set(int slot, double value);
  [[nodiscard]] double max() const { return value_[1]; }
  [[nodiscard]] int argmax() const { return index_[1]; }
  [[nodiscard]] double at(int slot) const { return value_[static_cast<std::size_t>(base_ + slot)]; }

 private:
  int base_ = 1;
  std::vector<double> value_;
  std::vector<int> index_;
};

/** One exchange (output or input) over the topology, per device bytes per peer. */
class FastExchange {
 public:
  FastExchange() = default;
  explicit FastExchange(const Topology& topology);
  /** Sets device d's bytes per peer (the link model's truncated bytes / N). */
  void set(int device, std::int64_t bytes_per_peer);
  /** max_d time_d (0 for one device). */
  [[nodiscard]] double max_ms() const;
  /** The device sending the most. */
  [[nodiscard]] int busiest() const { return bytes_.argmax(); }
  /** Device d's own sending time in ms (no latency, no receiving): the balance tie-breaker's term. */
  [[nodiscard]] double own_ms(int device) const;

 private:
  void refresh_host(int host);
  [[nodiscard]] double intra(std::int64_t b) const;
  [[nodiscard]] double inter(std::int64_t b) const;

  const Topology* topology_ = nullptr;
  int n_ = 0;
  int per_host_ = 1;
  std::vector<std::int64_t> b_;
  std::vector<std::int64_t> host_total_;
  std::int64_t total_ = 0;
  MaxTree bytes_;       ///< per device b (for the busiest sender)
  MaxTree host_term_;   ///< per host A_h
  MaxTree host_low_;    ///< per host −H_h (so the max is −min H)
};

}  // namespace embshard::detail::joint
