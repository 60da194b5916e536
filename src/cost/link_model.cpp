#include "embshard/cost/link_model.h"

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard {

std::vector<LinkVolume> all_to_all_volumes(const Topology& topology,
                                           const std::vector<std::int64_t>& dim_sums,
                                           std::int64_t batch_size, int element_bytes) {
  const int n = topology.num_devices();
  EMBSHARD_ASSERT(static_cast<int>(dim_sums.size()) == n);
  const int per_host = std::max(topology.devices_per_host, 1);
  // Device d sends `bytes[d]` to every other device, so each device's volumes follow from its own
  // bytes, its host's total and the grand total: O(devices), not O(devices²).
  const double share = static_cast<double>(batch_size) / n * element_bytes;
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(n));
  std::vector<std::int64_t> host_bytes(static_cast<std::size_t>(topology.num_hosts()), 0);
  std::int64_t total = 0;
  for (int d = 0; d < n; ++d) {
    bytes[d] = static_cast<std::int64_t>(share * static_cast<double>(dim_sums[d]));
    host_bytes[d / per_host] += bytes[d];
    total += bytes[d];
  }
  std::vector<LinkVolume> volumes(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) {
    const int host = d / per_host;
    const std::int64_t host_size = std::min(n, (host + 1) * per_host) - host * per_host;
    LinkVolume& v = volumes[d];
    v.send_intra_bytes = bytes[d] * (host_size - 1);
    v.send_inter_bytes = bytes[d] * (n - host_size);
    v.recv_intra_bytes = host_bytes[host] - bytes[d];
    v.recv_inter_bytes = total - host_bytes[host];
  }
  return volumes;
}

std::vector<double> all_to_all_ms(const Topology& topology,
                                  const std::vector<std::int64_t>& dim_sums,
                                  std::int64_t batch_size, int element_bytes) {
  const int n = topology.num_devices();
  std::vector<double> times(static_cast<std::size_t>(n), 0.0);
  if (n <= 1) return times;
  const std::vector<LinkVolume> volumes =
      all_to_all_volumes(topology, dim_sums, batch_size, element_bytes);
  const auto ms = [](std::int64_t bytes, double gbps) {
    return gbps > 0.0 ? static_cast<double>(bytes) / (gbps * 1e6) : 0.0;
  };
  for (int d = 0; d < n; ++d) {
    const LinkVolume& v = volumes[d];
    const double intra = ms(std::max(v.send_intra_bytes, v.recv_intra_bytes), topology.intra_host_gbps);
    const double inter = ms(std::max(v.send_inter_bytes, v.recv_inter_bytes), topology.inter_host_gbps);
    times[d] = topology.a2a_latency_us / 1000.0 + std::max(intra, inter);
  }
  return times;
}

}  // namespace embshard

namespace embshard {
namespace {

class LinkCommModel final : public CommModel {
 public:
  LinkCommModel(const Topology& topology, std::int64_t batch_size)
      : topology_(topology), batch_size_(batch_size) {}
  [[nodiscard]] std::string spec() const override { return "link"; }
  [[nodiscard]] std::string detail() const override {
    return detail::concat("link model of ", topology_.name, " at batch ", batch_size_);
  }
  [[nodiscard]] std::vector<DeviceComm> device_comm(const Task&,
                                                    std::span<const std::int64_t> dim_sums,
                                                    std::span<const double>) override {
    const std::vector<double> ms =
        all_to_all_ms(topology_, {dim_sums.begin(), dim_sums.end()}, batch_size_);
    std::vector<DeviceComm> comm(ms.size());
    // The backward all-to-all moves the same volumes the other way: the same time (file comment).
    for (std::size_t d = 0; d < ms.size(); ++d) comm[d] = {ms[d], ms[d]};
    return comm;
  }

 private:
  Topology topology_;
  std::int64_t batch_size_;
};

}  // namespace

std::unique_ptr<CommModel> make_link_comm_model(const Topology& topology, std::int64_t batch_size) {
  return std::make_unique<LinkCommModel>(topology, batch_size);
}

}  // namespace embshard
