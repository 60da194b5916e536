#include "embshard/cost/link_model.h"

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard {

namespace {

/**
 * Device d sends `bytes[d]` / N (whole bytes) to every other device, so each device's volumes
 * follow from its own bytes, its host's total and the grand total: O(devices), not O(devices²).
 * The hosts' totals go into `host_bytes` (reused, so search code need not allocate); returns the
 * grand total.
 */
std::int64_t host_totals(const Topology& topology, std::span<const double> bytes,
                         std::vector<std::int64_t>& host_bytes) {
  const int n = topology.num_devices();
  const int per_host = std::max(topology.devices_per_host, 1);
  host_bytes.assign(static_cast<std::size_t>(topology.num_hosts()), 0);
  std::int64_t total = 0;
  for (int d = 0; d < n; ++d) {
    const auto b = static_cast<std::int64_t>(bytes[d] / n);
    host_bytes[static_cast<std::size_t>(d / per_host)] += b;
    total += b;
  }
  return total;
}

/** Device d's volumes, given the hosts' totals and the grand total (host_totals). */
LinkVolume volume_of(const Topology& topology, int d, double bytes, const std::vector<std::int64_t>& host_bytes,
                     std::int64_t total) {
  const int n = topology.num_devices();
  const int per_host = std::max(topology.devices_per_host, 1);
  const int host = d / per_host;
  const std::int64_t host_size = std::min(n, (host + 1) * per_host) - host * per_host;
  const auto b = static_cast<std::int64_t>(bytes / n);
  const std::int64_t host_total = host_bytes[static_cast<std::size_t>(host)];
  return {b * (host_size - 1), b * (n - host_size), host_total - b, total - host_total};
}

}  // namespace

std::vector<LinkVolume> exchange_volumes(const Topology& topology, const std::vector<double>& bytes) {
  const int n = topology.num_devices();
  EMBSHARD_ASSERT(static_cast<int>(bytes.size()) == n);
  std::vector<std::int64_t> host_bytes;
  const std::int64_t total = host_totals(topology, bytes, host_bytes);
  std::vector<LinkVolume> volumes(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) volumes[static_cast<std::size_t>(d)] = volume_of(topology, d, bytes[d], host_bytes, total);
  return volumes;
}

void exchange_ms_into(const Topology& topology, std::span<const double> bytes, std::span<double> times) {
  const int n = topology.num_devices();
  EMBSHARD_ASSERT(static_cast<int>(bytes.size()) == n && static_cast<int>(times.size()) == n);
  if (n <= 1) {
    std::fill(times.begin(), times.end(), 0.0);
    return;
  }
  thread_local std::vector<std::int64_t> host_bytes;  // search code calls this per candidate move
  const std::int64_t total = host_totals(topology, bytes, host_bytes);
  const auto ms = [](std::int64_t b, double gbps) {
    return gbps > 0.0 ? static_cast<double>(b) / (gbps * 1e6) : 0.0;
  };
  for (int d = 0; d < n; ++d) {
    const LinkVolume v = volume_of(topology, d, bytes[d], host_bytes, total);
    const double intra = ms(std::max(v.send_intra_bytes, v.recv_intra_bytes), topology.intra_host_gbps);
    const double inter = ms(std::max(v.send_inter_bytes, v.recv_inter_bytes), topology.inter_host_gbps);
    times[d] = topology.a2a_latency_us / 1000.0 + std::max(intra, inter);
  }
}

std::vector<double> exchange_ms(const Topology& topology, const std::vector<double>& bytes) {
  std::vector<double> times(static_cast<std::size_t>(topology.num_devices()), 0.0);
  exchange_ms_into(topology, bytes, times);
  return times;
}

namespace {

std::vector<double> output_bytes(const std::vector<std::int64_t>& dim_sums, std::int64_t batch_size,
                                 int element_bytes) {
  std::vector<double> bytes;
  bytes.reserve(dim_sums.size());
  for (const std::int64_t dims : dim_sums) {
    bytes.push_back(static_cast<double>(batch_size) * static_cast<double>(dims) * element_bytes);
  }
  return bytes;
}

}  // namespace

std::vector<LinkVolume> all_to_all_volumes(const Topology& topology,
                                           const std::vector<std::int64_t>& dim_sums,
                                           std::int64_t batch_size, int element_bytes) {
  return exchange_volumes(topology, output_bytes(dim_sums, batch_size, element_bytes));
}

std::vector<double> all_to_all_ms(const Topology& topology,
                                  const std::vector<std::int64_t>& dim_sums,
                                  std::int64_t batch_size, int element_bytes) {
  return exchange_ms(topology, output_bytes(dim_sums, batch_size, element_bytes));
}

const char* to_string(InputCommMode mode) {
  switch (mode) {
    case InputCommMode::kExposed: return "exposed";
    case InputCommMode::kOverlap: return "overlap";
    case InputCommMode::kOmit: return "omit";
  }
  return "?";
}

std::vector<ParamSpec> with_input_comm_params(std::vector<ParamSpec> own) {
  own.insert(own.end(), {
      {"input_comm", ParamType::kString, "exposed", {}, {}, {"exposed", "overlap", "omit"},
       "the input all-to-all of indices: paid by the step (exposed), hidden under the previous "
       "step's compute where it fits (overlap, TorchRec's pipeline) or not costed (omit, the papers' benchmarks)"},
      {"index_bytes", ParamType::kInt, "8", 1, 8, {}, "bytes per index in the input all-to-all (int64: 8)"},
      {"length_bytes", ParamType::kInt, "4", 1, 8, {}, "bytes per length in the input all-to-all (int32: 4)"}});
  return own;
}

InputCommMode parse_input_comm_mode(const std::string& name) {
  for (const InputCommMode mode : {InputCommMode::kExposed, InputCommMode::kOverlap, InputCommMode::kOmit}) {
    if (name == to_string(mode)) return mode;
  }
  EMBSHARD_THROW("input_comm '", name, "' is not one of exposed, overlap, omit");
}

InputCommOptions input_comm_options(const Params& params) {
  InputCommOptions o;
  o.mode = parse_input_comm_mode(params.get_string("input_comm"));
  o.index_bytes = static_cast<int>(params.get_int("index_bytes"));
  o.length_bytes = static_cast<int>(params.get_int("length_bytes"));
  return o;
}

double shard_input_bytes(const Task& task, const PlacedShard& p, const InputCommOptions& options) {
  if (p.is_replica()) return 0.0;  // its own device's samples: nothing crosses a link
  const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
  const double row_share = static_cast<double>(p.shard.num_rows()) /
                           static_cast<double>(std::max<std::int64_t>(spec.num_rows(), 1));
  const double lookups = row_share * static_cast<double>(spec.stats.num_indices);
  return lookups * options.index_bytes + static_cast<double>(task.workload.batch_size) * options.length_bytes;
}

std::vector<double> device_input_bytes(const Task& task,
                                       const std::vector<std::vector<PlacedShard>>& by_device,
                                       const InputCommOptions& options) {
  std::vector<double> bytes(by_device.size(), 0.0);
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    for (const PlacedShard& p : by_device[d]) bytes[d] += shard_input_bytes(task, p, options);
  }
  return bytes;
}

double replica_gradient_bytes(const Task& task, std::span<const PlacedShard> shards) {
  double bytes = 0.0;
  for (const PlacedShard& p : shards) {
    if (!p.is_replica()) continue;
    const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
    bytes += static_cast<double>(spec.weight_bytes());
  }
  return bytes;
}

double all_reduce_ms_per_byte(const Topology& topology) {
  const int n = topology.num_devices();
  if (n <= 1) return 0.0;
  const double per_host = std::min(std::max(topology.devices_per_host, 1), n);
  const double hosts = topology.num_hosts();
  const auto per = [](double share, double gbps) { return gbps > 0 ? share / (gbps * 1e6) : 0.0; };
  return per(2.0 * (per_host - 1.0) / per_host, topology.intra_host_gbps) +
         per(2.0 * (hosts - 1.0) / hosts / per_host, topology.inter_host_gbps);
}

double all_reduce_ms(const Topology& topology, double bytes) {
  if (bytes <= 0.0 || topology.num_devices() <= 1) return 0.0;
  return topology.a2a_latency_us / 1000.0 + bytes * all_reduce_ms_per_byte(topology);
}

std::vector<double> input_all_to_all_ms(const Topology& topology, const std::vector<double>& input_bytes) {
  // Device d receives (N−1)/N of input_bytes[d] and sends 1/N of every other device's: the
  // output exchange with send and receive swapped, which the per-device max(send, recv) prices alike.
  return exchange_ms(topology, input_bytes);
}

}  // namespace embshard

namespace embshard {
namespace {

class LinkCommModel final : public CommModel {
 public:
  LinkCommModel(const Topology& topology, std::int64_t batch_size, InputCommOptions input)
      : topology_(topology), batch_size_(batch_size), input_(input) {}
  [[nodiscard]] std::string spec() const override { return "link"; }
  [[nodiscard]] std::string detail() const override {
    return detail::concat("link model of ", topology_.name, " at batch ", batch_size_,
                          ", input all-to-all ", to_string(input_.mode));
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
  void device_comm_into(const Task&, std::span<const std::int64_t> dim_sums, std::span<const double>,
                        std::span<DeviceComm> out) override {
    bytes_.resize(dim_sums.size());
    ms_.resize(dim_sums.size());
    for (std::size_t d = 0; d < dim_sums.size(); ++d)
      bytes_[d] = static_cast<double>(batch_size_) * static_cast<double>(dim_sums[d]) * 4;
    exchange_ms_into(topology_, bytes_, ms_);
    for (std::size_t d = 0; d < out.size(); ++d) out[d] = {ms_[d], ms_[d]};
  }
  [[nodiscard]] const InputCommOptions& input_options() const override { return input_; }
  [[nodiscard]] bool is_link_model() const override { return true; }

 private:
  std::vector<double> bytes_, ms_;
  Topology topology_;
  std::int64_t batch_size_;
  InputCommOptions input_;
};

}  // namespace

std::unique_ptr<CommModel> make_link_comm_model(const Topology& topology, std::int64_t batch_size,
                                                InputCommOptions input) {
  return std::make_unique<LinkCommModel>(topology, batch_size, input);
}

}  // namespace embshard
