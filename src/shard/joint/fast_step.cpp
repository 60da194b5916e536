// Incremental link-model exchange times for `joint` (fast_step.h).
#include "shard/joint/fast_step.h"

#include <algorithm>
#include <limits>

namespace embshard::detail::joint {

MaxTree::MaxTree(int size, double initial) {
  while (base_ < size) base_ *= 2;
  // Padding slots beyond `size` hold -inf, so they never win.
  value_.assign(static_cast<std::size_t>(2 * base_), -std::numeric_limits<double>::infinity());
  for (int i = 0; i < size; ++i) value_[static_cast<std::size_t>(base_ + i)] = initial;
  index_.assign(static_cast<std::size_t>(2 * base_), 0);
  for (int i = 0; i < base_; ++i) index_[static_cast<std::size_t>(base_ + i)] = i;
  for (int i = base_ - 1; i >= 1; --i) {
    const auto l = static_cast<std::size_t>(2 * i), r = l + 1;
    const bool left = value_[l] >= value_[r];
    value_[static_cast<std::size_t>(i)] = left ? value_[l] : value_[r];
    index_[static_cast<std::size_t>(i)] = left ? index_[l] : index_[r];
  }
}

void MaxTree::set(int slot, double value) {
  auto i = static_cast<std::size_t>(base_ + slot);
  value_[i] = value;
  for (i /= 2; i >= 1; i /= 2) {
    const std::size_t l = 2 * i, r = 2 * i + 1;
    const bool left = value_[l] >= value_[r];  // ties: the lower slot
    value_[i] = left ? value_[l] : value_[r];
    index_[i] = left ? index_[l] : index_[r];
  }
}

FastExchange::FastExchange(const Topology& topology)
    : topology_(&topology), n_(topology.num_devices()),
      per_host_(std::max(topology.devices_per_host, 1)),
      b_(static_cast<std::size_t>(n_), 0),
      host_total_(static_cast<std::size_t>(topology.num_hosts()), 0),
      bytes_(n_), host_term_(topology.num_hosts()), host_low_(topology.num_hosts()) {}

double FastExchange::intra(std::int64_t b) const {
  return topology_->intra_host_gbps > 0.0 ? static_cast<double>(b) / (topology_->intra_host_gbps * 1e6) : 0.0;
}

double FastExchange::inter(std::int64_t b) const {
  return topology_->inter_host_gbps > 0.0 ? static_cast<double>(b) / (topology_->inter_host_gbps * 1e6) : 0.0;
}

void FastExchange::set(int device, std::int64_t bytes_per_peer) {
  const auto d = static_cast<std::size_t>(device);
  const int host = device / per_host_;
  host_total_[static_cast<std::size_t>(host)] += bytes_per_peer - b_[d];
  total_ += bytes_per_peer - b_[d];
  b_[d] = bytes_per_peer;
  bytes_.set(device, static_cast<double>(bytes_per_peer));
  refresh_host(host);
}

void FastExchange::refresh_host(int host) {
  const int first = host * per_host_;
  const int last = std::min(n_, first + per_host_);
  const std::int64_t size = last - first;
  std::int64_t most = b_[static_cast<std::size_t>(first)], least = most;
  for (int d = first + 1; d < last; ++d) {
    most = std::max(most, b_[static_cast<std::size_t>(d)]);
    least = std::min(least, b_[static_cast<std::size_t>(d)]);
  }
  const std::int64_t h_total = host_total_[static_cast<std::size_t>(host)];
  // max over the host's devices of max(intra, send-inter) (exchange_ms_into, with recv-inter apart)
  const double term = std::max(intra(std::max(most * (size - 1), h_total - least)), inter(most * (n_ - size)));
  host_term_.set(host, term);
  host_low_.set(host, -static_cast<double>(h_total));
}

double FastExchange::own_ms(int device) const {
  const int host = device / per_host_;
  const std::int64_t size = std::min(n_, (host + 1) * per_host_) - host * per_host_;
  const std::int64_t b = b_[static_cast<std::size_t>(device)];
  return std::max(intra(b * (size - 1)), inter(b * (n_ - size)));
}

double FastExchange::max_ms() const {
  if (n_ <= 1) return 0.0;
  const auto lowest_host_total = static_cast<std::int64_t>(-host_low_.max());
  return topology_->a2a_latency_us / 1000.0 + std::max(host_term_.max(), inter(total_ - lowest_host_total));
}

}  // namespace embshard::detail::joint
