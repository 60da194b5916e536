#include "embshard/cost/link_model.h"

#include <algorithm>
#include <array>

#include "embshard/core/error.h"

namespace embshard {

namespace {

/**
 * The per-peer bytes of an exchange (file comment: b_d, s_d, q_h, truncated) and their sums per
 * host and over all, from which every device's volumes follow in O(1): O(devices) in all, not
 * O(devices²). Kept in thread-local buffers so that search code calling per move need not allocate.
 */
struct PeerBytes {
  std::vector<std::int64_t> b, s, q;          ///< per device, per device, per host
  std::vector<std::int64_t> host_b, host_bs;  ///< per host: Σ b, Σ (b + s)
  std::int64_t total_b = 0, total_q = 0;
  int n = 0, per_host = 1, hosts = 1;

  void fill(const Topology& topology, const ExchangeBytes& bytes) {
    n = topology.num_devices();
    per_host = std::max(topology.host_size(), 1);
    hosts = topology.num_hosts();
    EMBSHARD_ASSERT(static_cast<int>(bytes.pooled.size()) == n);
    EMBSHARD_ASSERT(bytes.partial.empty() || static_cast<int>(bytes.partial.size()) == n);
    EMBSHARD_ASSERT(bytes.reduced.empty() || static_cast<int>(bytes.reduced.size()) == hosts);
    b.assign(static_cast<std::size_t>(n), 0);
    s.assign(static_cast<std::size_t>(n), 0);
    q.assign(static_cast<std::size_t>(hosts), 0);
    host_b.assign(static_cast<std::size_t>(hosts), 0);
    host_bs.assign(static_cast<std::size_t>(hosts), 0);
    total_b = total_q = 0;
    for (int d = 0; d < n; ++d) {
      const auto i = static_cast<std::size_t>(d);
      b[i] = static_cast<std::int64_t>(bytes.pooled[i] / n);
      if (!bytes.partial.empty()) s[i] = static_cast<std::int64_t>(bytes.partial[i] / per_host);
      const auto h = static_cast<std::size_t>(d / per_host);
      host_b[h] += b[i];
      host_bs[h] += b[i] + s[i];
      total_b += b[i];
    }
    for (std::size_t h = 0; h < q.size() && !bytes.reduced.empty(); ++h) {
      q[h] = static_cast<std::int64_t>(bytes.reduced[h] / n);
      total_q += q[h];
    }
  }

  [[nodiscard]] LinkVolume volume(int d) const {
    const auto i = static_cast<std::size_t>(d);
    const auto h = static_cast<std::size_t>(d / per_host);
    return {(per_host - 1) * (b[i] + s[i]), (n - per_host) * b[i] + (hosts - 1) * q[h], host_bs[h] - (b[i] + s[i]),
            total_b - host_b[h] + total_q - q[h]};
  }
};

PeerBytes& peer_bytes(const Topology& topology, const ExchangeBytes& bytes) {
  thread_local PeerBytes peers;
  peers.fill(topology, bytes);
  return peers;
}

}  // namespace

ExchangeBytes output_exchange_bytes(const OutputDims& outputs, std::int64_t batch_size, int element_bytes) {
  const auto scale = [&](const std::vector<std::int64_t>& dims) {
    std::vector<double> bytes(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i)
      bytes[i] = static_cast<double>(batch_size) * static_cast<double>(dims[i]) * element_bytes;
    return bytes;
  };
  return {scale(outputs.pooled), scale(outputs.partial), scale(outputs.reduced)};
}

std::vector<LinkVolume> exchange_volumes(const Topology& topology, const ExchangeBytes& bytes) {
  const PeerBytes& peers = peer_bytes(topology, bytes);
  std::vector<LinkVolume> volumes(static_cast<std::size_t>(peers.n));
  for (int d = 0; d < peers.n; ++d) volumes[static_cast<std::size_t>(d)] = peers.volume(d);
  return volumes;
}

void exchange_ms_into(const Topology& topology, const ExchangeBytes& bytes, std::span<double> times) {
  const int n = topology.num_devices();
  EMBSHARD_ASSERT(static_cast<int>(times.size()) == n);
  if (n <= 1) {
    std::fill(times.begin(), times.end(), 0.0);
    return;
  }
  const PeerBytes& peers = peer_bytes(topology, bytes);
  const auto ms = [](std::int64_t b, double gbps) { return gbps > 0.0 ? static_cast<double>(b) / (gbps * 1e6) : 0.0; };
  // A link's bytes: the larger direction (full duplex) or both (half duplex, topology.h).
  const auto link = [&](std::int64_t sent, std::int64_t received) {
    return topology.half_duplex ? sent + received : std::max(sent, received);
  };
  for (int d = 0; d < n; ++d) {
    const LinkVolume v = peers.volume(d);
    const double intra = ms(link(v.send_intra_bytes, v.recv_intra_bytes), topology.intra_gbps(d));
    const double inter = ms(link(v.send_inter_bytes, v.recv_inter_bytes), topology.inter_gbps(d));
    times[static_cast<std::size_t>(d)] = topology.a2a_latency_us / 1000.0 + std::max(intra, inter);
  }
}

std::vector<double> exchange_ms(const Topology& topology, const ExchangeBytes& bytes) {
  std::vector<double> times(static_cast<std::size_t>(topology.num_devices()), 0.0);
  exchange_ms_into(topology, bytes, times);
  return times;
}

std::vector<LinkVolume> exchange_volumes(const Topology& topology, const std::vector<double>& bytes) {
  return exchange_volumes(topology, ExchangeBytes{bytes, {}, {}});
}

void exchange_ms_into(const Topology& topology, std::span<const double> bytes, std::span<double> times) {
  thread_local ExchangeBytes pooled;
  pooled.pooled.assign(bytes.begin(), bytes.end());
  exchange_ms_into(topology, pooled, times);
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

std::vector<LinkVolume> all_to_all_volumes(const Topology& topology, const std::vector<std::int64_t>& dim_sums,
                                           std::int64_t batch_size, int element_bytes) {
  return exchange_volumes(topology, output_bytes(dim_sums, batch_size, element_bytes));
}

std::vector<double> all_to_all_ms(const Topology& topology, const std::vector<std::int64_t>& dim_sums,
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
  own.insert(
      own.end(),
      {{"input_comm",
        ParamType::kString,
        "exposed",
        {},
        {},
        {"exposed", "overlap", "omit"},
        "the input all-to-all of indices: paid by the step (exposed), hidden under the previous "
        "step's compute where it fits (overlap, TorchRec's pipeline) or not costed (omit, the papers' benchmarks)"},
       {"index_bytes", ParamType::kInt, "8", 1, 8, {}, "bytes per index in the input all-to-all (int64: 8)"},
       {"length_bytes", ParamType::kInt, "4", 1, 8, {}, "bytes per length in the input all-to-all (int32: 4)"},
       {"exchanges",
        ParamType::kString,
        "fused",
        {},
        {},
        {"fused", "per_type"},
        "one input and one output exchange for the whole plan (fused, the papers' benchmarks) or one per "
        "sharding type it uses (per_type, as TorchRec runs them: each further type pays the latency again)"}});
  return own;
}

int exchange_groups(const Plan& plan) {
  std::array<int, kNumShardingTypes> tables_per_type{};
  for (const TablePlacement& t : plan.tables) ++tables_per_type[static_cast<std::size_t>(t.type)];
  return exchange_groups(tables_per_type);
}

int exchange_groups(const std::array<int, kNumShardingTypes>& tables_per_type) {
  int groups = 0;
  for (int t = 0; t < kNumShardingTypes; ++t) {
    if (t != static_cast<int>(ShardingType::kDataParallel) && tables_per_type[static_cast<std::size_t>(t)] > 0)
      ++groups;
  }
  return std::max(1, groups);
}

double extra_group_latency_ms(const Topology& topology, const InputCommOptions& options, int groups) {
  return options.per_type_exchanges ? (groups - 1) * topology.a2a_latency_us / 1000.0 : 0.0;
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
  o.per_type_exchanges = params.get_string("exchanges") == "per_type";
  return o;
}

double shard_input_bytes(const Task& task, const PlacedShard& p, const InputCommOptions& options) {
  if (p.is_replica()) return 0.0;  // its own device's samples: nothing crosses a link
  const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
  const double lookups = spec.row_share(p.shard.num_rows()) * static_cast<double>(spec.stats.num_indices);
  return lookups * options.index_bytes + static_cast<double>(task.workload.batch_size) * options.length_bytes;
}

std::vector<double> device_input_bytes(const Task& task, const std::vector<std::vector<PlacedShard>>& by_device,
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

namespace {

/** ms per byte of a hierarchical all-reduce over `per_host` ranks on each of `hosts` hosts. */
double hierarchical_all_reduce_ms_per_byte(const Topology& topology, double per_host, double hosts) {
  // A ring step sends and receives as much: on a half-duplex link both take the link's time.
  const double directions = topology.half_duplex ? 2.0 : 1.0;
  const auto per = [&](double share, double gbps) { return gbps > 0 ? directions * share / (gbps * 1e6) : 0.0; };
  // A ring runs at its slowest link's pace (hosts with links of their own: mixed hardware).
  return per(2.0 * (per_host - 1.0) / per_host, topology.slowest_intra_gbps()) +
         per(2.0 * (hosts - 1.0) / hosts / per_host, topology.slowest_inter_gbps());
}

}  // namespace

double all_reduce_ms_per_byte(const Topology& topology) {
  const int n = topology.num_devices();
  if (n <= 1) return 0.0;
  return hierarchical_all_reduce_ms_per_byte(topology, std::min(std::max(topology.devices_per_host, 1), n),
                                             topology.num_hosts());
}

double replica_sync_bytes(const Task& task, std::span<const PlacedShard> shards) {
  double bytes = 0.0;
  for (const PlacedShard& p : shards) {
    const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
    bytes += static_cast<double>(spec.shard_bytes(p.shard.num_rows(), p.shard.num_cols()));
  }
  return bytes;
}

ReplicaSyncCost replica_sync_cost(const Topology& topology, const ShardingGroups& groups, int sync_every) {
  if (!groups.enabled()) return {};
  const ReplicaSpread spread = replica_spread(groups, topology.num_devices(), topology.host_size());
  const double every = std::max(sync_every, 1);
  return {topology.a2a_latency_us / 1000.0 / every,
          hierarchical_all_reduce_ms_per_byte(topology, spread.per_host, spread.hosts) / every};
}

double replica_sync_ms(const Topology& topology, const ShardingGroups& groups, int sync_every, double bytes) {
  return replica_sync_cost(topology, groups, sync_every).at(bytes);
}

double replica_sync_floor_ms(const Task& task, const ShardingGroups& groups) {
  return replica_sync_floor_ms(task, groups, static_cast<double>(task.workload.total_bytes()));
}

double replica_sync_floor_ms(const Task& task, const ShardingGroups& groups, double total_bytes) {
  return replica_sync_ms(task.topology, groups, task.workload.replica_sync_every, total_bytes / groups.size);
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
    return detail::concat("link model of ", topology_.name, " at batch ", batch_size_, ", input all-to-all ",
                          to_string(input_.mode));
  }
  [[nodiscard]] std::vector<DeviceComm> device_comm(const Task& task, const OutputDims& outputs,
                                                    std::span<const double> fw_comp_ms) override {
    std::vector<DeviceComm> comm(outputs.pooled.size());
    device_comm_into(task, outputs, fw_comp_ms, comm);
    return comm;
  }
  void device_comm_into(const Task&, const OutputDims& outputs, std::span<const double>,
                        std::span<DeviceComm> out) override {
    // A 2D plan is costed by a model built for its sharding group's task (plan/sharding_groups.h).
    EMBSHARD_ASSERT(outputs.pooled.size() == topology_.devices.size());
    bytes_ = output_exchange_bytes(outputs, batch_size_);
    ms_.resize(outputs.pooled.size());
    exchange_ms_into(topology_, bytes_, ms_);
    // The backward exchange moves the same volumes the other way: the same time (file comment).
    for (std::size_t d = 0; d < out.size(); ++d) out[d] = {ms_[d], ms_[d]};
  }
  [[nodiscard]] const InputCommOptions& input_options() const override { return input_; }
  [[nodiscard]] bool is_link_model() const override { return true; }

 private:
  ExchangeBytes bytes_;
  std::vector<double> ms_;
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
