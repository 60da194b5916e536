#pragma once
/**
 * @file fast_step.h
 * @brief The `step` objective of an additive compute model and the link model, kept up to date
 *        in O(devices per host + log devices) per changed device instead of O(devices) per query:
 *        what lets `joint` search thousands of devices (joint.h).
 *
 * Under the link model (cost/link_model.h) device d of host h (L devices, H hosts, N in all)
 * needs, with b_d its all-to-all bytes per peer, s_d its reduce-scatter bytes per host peer, q_h
 * its host's reduced bytes per remote peer, u = b + s, and sums over the host (U_h, B_h) and all
 * (T = Σ b, Q = Σ q):
 *   latency + max(intra(max(u_d·(L−1), U_h − u_d)), inter(max(b_d·(N−L) + q_h·(H−1), T − B_h + Q − q_h)))
 * The largest over a host's devices therefore depends only on the host's largest and smallest u,
 * its largest b, U_h and q_h, and the largest over all hosts on the largest such host term and
 * the smallest B_h + q_h:
 *   max_d time_d = latency + max(max_h A_h, inter(T + Q − min_h (B_h + q_h))).
 * Where hosts have links of their own (mixed hardware, topology.h), A_h is at host h's rates and
 * the receiving term is taken per group of hosts of one NIC bandwidth, at its rate, with the
 * group's smallest B_h + q_h.
 * Per device the forward and backward compute are kept in max-trees. `value()` is bit for bit
 * what `objective_value(…, kStep)` gives for the same loads (the same expressions, in the same
 * order; addition is monotone, so max_d (latency + x_d) = latency + max_d x_d).
 */
#include <cstdint>
#include <vector>

#include "embshard/data/topology.h"

namespace embshard::detail::joint {

/** A max-tree over a fixed number of slots (all `initial` at first); its argmax is found by
 *  descent, as it is asked far less often than a slot changes. */
class MaxTree {
 public:
  explicit MaxTree(int size = 0, double initial = 0.0);
  void set(int slot, double value);
  [[nodiscard]] double max() const { return value_[1]; }
  /** The slot holding the maximum, the lowest of tied slots. */
  [[nodiscard]] int argmax() const;
  [[nodiscard]] double at(int slot) const { return value_[static_cast<std::size_t>(base_ + slot)]; }

 private:
  /** Node i's value from its children's: the left one on ties (and where the right is NaN). */
  [[nodiscard]] double larger(std::size_t i) const {
    return value_[2 * i] >= value_[2 * i + 1] ? value_[2 * i] : value_[2 * i + 1];
  }

  int base_ = 1;
  std::vector<double> value_;
};

/**
 * The devices ordered by load, for choosing where a piece may go (joint.h "candidates"): the k
 * least loaded by (load, HBM used, index), skipping some, among those with at least `bytes` of HBM
 * free when asked. A tree of each subtree's least key and most free HBM answers by best-first
 * descent in O(k log N) instead of sorting every device.
 */
class LoadIndex {
 public:
  LoadIndex() = default;
  explicit LoadIndex(int size);
  void set(int slot, double load_ms, std::int64_t hbm_used, std::int64_t hbm_free);
  /** Appends to `out` up to k slots (least key first) not marked in `skip`, each with at least
   *  `bytes` free when `need_room`. */
  void least(int k, std::int64_t bytes, bool need_room, const std::vector<bool>& skip, std::vector<int>& out) const;

 private:
  struct Key {
    double load_ms;
    std::int64_t hbm_used;
    int slot;
    friend bool operator<(const Key& a, const Key& b) {
      if (a.load_ms != b.load_ms) return a.load_ms < b.load_ms;
      return a.hbm_used != b.hbm_used ? a.hbm_used < b.hbm_used : a.slot < b.slot;
    }
    friend bool operator==(const Key& a, const Key& b) {
      return a.load_ms == b.load_ms && a.hbm_used == b.hbm_used && a.slot == b.slot;
    }
  };
  using Entry = std::pair<Key, std::size_t>;
  int size_ = 0;
  int base_ = 1;
  std::vector<Key> least_;           ///< per node
  std::vector<std::int64_t> free_;   ///< per node: the most free HBM below it
  mutable std::vector<Entry> heap_;  ///< least()'s frontier, kept between calls (one index per search thread)
};

/** One exchange (output or input) over the topology, in bytes per peer (file comment). */
class FastExchange {
 public:
  FastExchange() = default;
  explicit FastExchange(const Topology& topology);
  /** Sets device d's bytes per peer: all-to-all (b_d) and reduce-scatter inside its host (s_d),
   *  the link model's truncated bytes / N and / L. */
  void set(int device, std::int64_t pooled_per_peer, std::int64_t partial_per_peer = 0);
  /** Sets host h's reduced bytes per remote peer (q_h, the link model's truncated bytes / N). */
  void set_host(int host, std::int64_t reduced_per_peer);
  /** max_d time_d (0 for one device). */
  [[nodiscard]] double max_ms() const;
  /** The device whose own sending takes longest. */
  [[nodiscard]] int busiest() const { return own_.argmax(); }
  /** Device d's own sending time in ms (no latency, no receiving, not its host's reduced rows):
   *  the balance tie-breaker's term. */
  [[nodiscard]] double own_ms(int device) const;
  /** What host h's devices each send of its reduced rows across hosts, in ms (the tie-breaker's). */
  [[nodiscard]] double host_ms(int host) const;

 private:
  void refresh_host(int host);
  /** ms for b bytes over host h's intra-host link and its NIC (each host's own, topology.h). */
  [[nodiscard]] double intra(std::int64_t b, int host) const;
  [[nodiscard]] double inter(std::int64_t b, int host) const;

  const Topology* topology_ = nullptr;
  int n_ = 0;
  int per_host_ = 1;
  int hosts_ = 1;
  std::vector<std::int64_t> b_, s_, q_;
  std::vector<std::int64_t> host_b_, host_u_;  ///< per host Σ b, Σ (b + s)
  std::int64_t total_b_ = 0, total_q_ = 0;
  MaxTree own_;        ///< per device own_ms (for the busiest sender)
  MaxTree host_term_;  ///< per host A_h
  /// Hosts grouped by NIC bandwidth (one group unless hosts have links of their own): a host's
  /// devices receive all but its own B_h + q_h across hosts at its NIC's rate, so in each group
  /// the host with the least receives longest.
  std::vector<double> intra_gbps_, inter_gbps_;  ///< per host: its links (Topology::intra_gbps / inter_gbps)
  std::vector<int> nic_group_;                   ///< per host: its group
  std::vector<int> nic_group_host_;              ///< per group: one of its hosts (for the group's rate)
  std::vector<MaxTree> host_low_;                ///< per group, per host −(B_h + q_h) (−inf off the group)
};

}  // namespace embshard::detail::joint
