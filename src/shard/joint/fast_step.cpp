// Incremental link-model exchange times for `joint` (fast_step.h).
#include "shard/joint/fast_step.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace embshard::detail::joint {

MaxTree::MaxTree(int size, double initial) {
  while (base_ < size) base_ *= 2;
  // Padding slots beyond `size` hold -inf, so they never win.
  value_.assign(static_cast<std::size_t>(2 * base_), -std::numeric_limits<double>::infinity());
  for (int i = 0; i < size; ++i) value_[static_cast<std::size_t>(base_ + i)] = initial;
  for (int i = base_ - 1; i >= 1; --i) value_[static_cast<std::size_t>(i)] = larger(static_cast<std::size_t>(i));
}

void MaxTree::set(int slot, double value) {
  auto i = static_cast<std::size_t>(base_ + slot);
  value_[i] = value;
  for (i /= 2; i >= 1; i /= 2) {
    const double v = larger(i);
    // A node that keeps its value, bit for bit, leaves every node above it as it was (each depends
    // only on its children), so the walk stops there.
    if (v == value_[i] && std::signbit(v) == std::signbit(value_[i])) return;
    value_[i] = v;
  }
}

int MaxTree::argmax() const {
  std::size_t i = 1;  // down the side holding the maximum; ties: the lower slot
  while (i < static_cast<std::size_t>(base_))
    i = value_[2 * i] >= value_[2 * i + 1] ? 2 * i : 2 * i + 1;  // as larger()
  return static_cast<int>(i) - base_;
}

LoadIndex::LoadIndex(int size) : size_(size) {
  while (base_ < size) base_ *= 2;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // Padding keys sort after every device's, an unreachable device's (infinite load) included.
  least_.assign(static_cast<std::size_t>(2 * base_),
                Key{kInf, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<int>::max()});
  free_.assign(static_cast<std::size_t>(2 * base_), std::numeric_limits<std::int64_t>::min());
  for (int i = 0; i < size; ++i) set(i, 0.0, 0, 0);
}

void LoadIndex::set(int slot, double load_ms, std::int64_t hbm_used, std::int64_t hbm_free) {
  auto i = static_cast<std::size_t>(base_ + slot);
  least_[i] = {load_ms, hbm_used, slot};
  free_[i] = hbm_free;
  for (i /= 2; i >= 1; i /= 2) {
    const Key key = std::min(least_[2 * i], least_[2 * i + 1]);
    const std::int64_t most_free = std::max(free_[2 * i], free_[2 * i + 1]);
    if (key == least_[i] && most_free == free_[i]) return;  // nothing above changes (MaxTree::set)
    least_[i] = key;
    free_[i] = most_free;
  }
}

void LoadIndex::least(int k, std::int64_t bytes, bool need_room, const std::vector<bool>& skip,
                      std::vector<int>& out) const {
  // Best-first: a subtree's least key bounds every key below it, so slots come out in key order.
  // A popped subtree is walked down its smaller side, the other side pending, for as long as that
  // side comes before everything pending: one heap operation a level instead of three.
  const auto later = [](const Entry& a, const Entry& b) { return b.first < a.first; };
  const auto leads = [&](std::size_t node) {  // holds a slot, and room when asked
    return least_[node].slot < size_ && !(need_room && free_[node] < bytes);
  };
  std::vector<Entry>& heap = heap_;  // reused: no allocation per query
  heap.clear();
  const auto push = [&](std::size_t node) {
    heap.emplace_back(least_[node], node);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  if (leads(1)) push(1);
  const auto leaves = static_cast<std::size_t>(base_);
  int found = 0;
  while (!heap.empty() && found < k) {
    std::pop_heap(heap.begin(), heap.end(), later);
    std::size_t node = heap.back().second;
    heap.pop_back();
    while (node < leaves) {  // a subtree that leads has a child that does
      std::size_t next = 2 * node;
      const std::size_t right = next + 1;
      if (!leads(next)) {
        if (!leads(right)) break;  // not reached while padding keys sort last; never a padding slot
        next = right;
      } else if (leads(right)) {
        const std::size_t other = least_[right] < least_[next] ? next : right;
        if (other == next) next = right;
        push(other);
      }
      if (!heap.empty() && heap.front().first < least_[next]) {
        push(next);
        node = 0;
        break;
      }
      node = next;
    }
    if (node < leaves) continue;  // pushed back, or nothing below leads
    const int slot = static_cast<int>(node - leaves);
    if (!skip[static_cast<std::size_t>(slot)]) out.push_back(slot), ++found;
  }
}

FastExchange::FastExchange(const Topology& topology)
    : topology_(&topology), n_(topology.num_devices()), per_host_(std::max(topology.host_size(), 1)),
      hosts_(topology.num_hosts()), b_(static_cast<std::size_t>(n_), 0), s_(static_cast<std::size_t>(n_), 0),
      q_(static_cast<std::size_t>(hosts_), 0), host_b_(static_cast<std::size_t>(hosts_), 0),
      host_u_(static_cast<std::size_t>(hosts_), 0), own_(n_), host_term_(hosts_),
      nic_group_(static_cast<std::size_t>(hosts_), 0) {
  std::vector<double> rates;  // each group's NIC bandwidth, in order of first appearance
  for (int h = 0; h < hosts_; ++h) {
    intra_gbps_.push_back(topology.intra_gbps(h * per_host_));
    inter_gbps_.push_back(topology.inter_gbps(h * per_host_));
    const double gbps = inter_gbps_.back();
    const auto it = std::find(rates.begin(), rates.end(), gbps);
    nic_group_[static_cast<std::size_t>(h)] = static_cast<int>(it - rates.begin());
    if (it == rates.end()) rates.push_back(gbps), nic_group_host_.push_back(h);
  }
  constexpr double kOff = -std::numeric_limits<double>::infinity();
  host_low_.assign(rates.size(), MaxTree(hosts_, kOff));
  for (int h = 0; h < hosts_; ++h)
    host_low_[static_cast<std::size_t>(nic_group_[static_cast<std::size_t>(h)])].set(h, 0.0);
}

double FastExchange::intra(std::int64_t b, int host) const {
  const double gbps = intra_gbps_[static_cast<std::size_t>(host)];
  return gbps > 0.0 ? static_cast<double>(b) / (gbps * 1e6) : 0.0;
}

double FastExchange::inter(std::int64_t b, int host) const {
  const double gbps = inter_gbps_[static_cast<std::size_t>(host)];
  return gbps > 0.0 ? static_cast<double>(b) / (gbps * 1e6) : 0.0;
}

void FastExchange::set(int device, std::int64_t pooled_per_peer, std::int64_t partial_per_peer) {
  const auto d = static_cast<std::size_t>(device);
  const auto host = static_cast<std::size_t>(device / per_host_);
  host_b_[host] += pooled_per_peer - b_[d];
  host_u_[host] += pooled_per_peer + partial_per_peer - b_[d] - s_[d];
  total_b_ += pooled_per_peer - b_[d];
  b_[d] = pooled_per_peer;
  s_[d] = partial_per_peer;
  own_.set(device, own_ms(device));
  refresh_host(static_cast<int>(host));
}

void FastExchange::set_host(int host, std::int64_t reduced_per_peer) {
  const auto h = static_cast<std::size_t>(host);
  total_q_ += reduced_per_peer - q_[h];
  q_[h] = reduced_per_peer;
  refresh_host(host);
}

void FastExchange::refresh_host(int host) {
  const int first = host * per_host_;
  const int last = std::min(n_, first + per_host_);
  const auto h = static_cast<std::size_t>(host);
  std::int64_t most_u = b_[static_cast<std::size_t>(first)] + s_[static_cast<std::size_t>(first)], least_u = most_u;
  std::int64_t most_b = b_[static_cast<std::size_t>(first)];
  for (int d = first + 1; d < last; ++d) {
    const auto i = static_cast<std::size_t>(d);
    most_u = std::max(most_u, b_[i] + s_[i]);
    least_u = std::min(least_u, b_[i] + s_[i]);
    most_b = std::max(most_b, b_[i]);
  }
  // max over the host's devices of max(intra, send-inter) (exchange_ms_into, with recv-inter apart)
  const double term = std::max(intra(std::max(most_u * (per_host_ - 1), host_u_[h] - least_u), host),
                               inter(most_b * (n_ - per_host_) + q_[h] * (hosts_ - 1), host));
  host_term_.set(host, term);
  host_low_[static_cast<std::size_t>(nic_group_[h])].set(host, -static_cast<double>(host_b_[h] + q_[h]));
}

double FastExchange::own_ms(int device) const {
  const auto d = static_cast<std::size_t>(device);
  const int host = device / per_host_;
  return std::max(intra((b_[d] + s_[d]) * (per_host_ - 1), host), inter(b_[d] * (n_ - per_host_), host));
}

double FastExchange::host_ms(int host) const { return inter(q_[static_cast<std::size_t>(host)] * (hosts_ - 1), host); }

double FastExchange::max_ms() const {
  if (n_ <= 1) return 0.0;
  double receiving = 0.0;  // the longest receiving across hosts: each NIC group's host receiving most
  for (std::size_t g = 0; g < host_low_.size(); ++g) {
    const auto lowest = static_cast<std::int64_t>(-host_low_[g].max());
    receiving = std::max(receiving, inter(total_b_ + total_q_ - lowest, nic_group_host_[g]));
  }
  return topology_->a2a_latency_us / 1000.0 + std::max(host_term_.max(), receiving);
}

}  // namespace embshard::detail::joint
