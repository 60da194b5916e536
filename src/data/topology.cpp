#include "embshard/data/topology.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/core/spec.h"

namespace embshard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/** Public figures of one node type (per GPU unless said otherwise). */
struct NodeSheet {
  const char* name;
  const char* device_kind;
  const char* cuda_name;  ///< the name CUDA reports for this GPU (cudaDeviceProp::name)
  const char* describe;   ///< the sources of the figures
  int gpus_per_node;
  double hbm_gib;         ///< device memory
  double hbm_gbps;        ///< device-memory bandwidth
  double uvm_gib;         ///< host DRAM per GPU (node DRAM / GPUs)
  double uvm_gbps;        ///< host link per GPU, per direction (PCIe generation x16)
  double intra_gbps;      ///< GPU-to-GPU per direction (NVLink or PCIe), NCCL's busbw where published
  double inter_gbps;      ///< NIC bandwidth per GPU (node NICs / GPUs), NCCL's busbw where published
  double a2a_latency_us;  ///< all-to-all floor inside a node
};

// Vendor data sheets: RTX 2080 Ti (11 GB GDDR6, 616 GB/s, PCIe 3.0 x16 = 15.75 GB/s/direction), in
// the seeds' server of eight (paper 003 §4); its all-to-all latency and GPU-to-GPU bandwidth are
// not the data sheet's but fitted to the papers' measurements (`embshard profile calibrate
// --figures models/calibration/2080ti-papers.json`, docs/judge.md): GeForce cards have no PCIe
// peer-to-peer, so NCCL stages every transfer through host memory (the fit puts the per-device
// constant in the call and none in the latency: docs/judge.md). The other presets keep the
// data-sheet NCCL floor (25 µs). Their link bandwidths are NCCL bus bandwidths where published
// (cost/link_model.h): on H100 / H200 nodes NCCL reaches 370 GB/s over NVLink4's 450 GB/s line rate
// (~20% protocol overhead; NVIDIA's NCCL maintainers, nccl-tests issue #212) and an all-to-all runs
// at one NIC's rate, 48-49 GB/s for a 400 Gb/s ConnectX-7 (nccl-tests issue #267); V100 and A100
// keep the data sheets' line rates (their single-host figures in docs/benchmarks.md use them).
// DGX-1 V100 (32 GB HBM2 900 GB/s, NVLink2 6 links x 25 GB/s = 150 GB/s/direction, 512 GB host,
// 4x EDR 100 Gb/s IB); DGX A100 (80 GB HBM2e 2,039 GB/s, NVLink3 300 GB/s/direction, PCIe 4.0
// 31.5 GB/s, 2 TB host, 8x HDR 200 Gb/s); DGX H100 (80 GB HBM3 3,350 GB/s, NVLink4 450
// GB/s/direction, PCIe 5.0 63 GB/s, 2 TB host, 8x NDR 400 Gb/s); DGX H200 (141 GB HBM3e
// 4,800 GB/s, otherwise an H100's node).
constexpr NodeSheet kSheets[] = {
    {"2080ti", "GeForce-RTX-2080Ti-11GB", "NVIDIA GeForce RTX 2080 Ti",
     "RTX 2080 Ti PCIe server of 8: 11 GB GDDR6 at 616 GB/s, PCIe 3.0 x16 links, 100 Gb/s NIC per node; all-to-all "
     "fitted to the papers",
     8, 11.0, 616.0, 32.0, 15.75, 6.621, 12.5 / 8, 0.0},
    {"v100", "V100-SXM2-32GB", "Tesla V100-SXM2-32GB",
     "DGX-1 V100: 32 GB HBM2 at 900 GB/s, NVLink2 150 GB/s/dir, PCIe 3.0, 4x100 Gb/s IB per node", 8, 32.0, 900.0, 64.0,
     15.75, 150.0, 50.0 / 8, 25.0},
    {"a100", "A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB",
     "DGX A100: 80 GB HBM2e at 2039 GB/s, NVLink3 300 GB/s/dir, PCIe 4.0, 8x200 Gb/s IB per node", 8, 80.0, 2039.0,
     256.0, 31.5, 300.0, 25.0, 25.0},
    {"h100", "H100-SXM5-80GB", "NVIDIA H100 80GB HBM3",
     "DGX H100: 80 GB HBM3 at 3350 GB/s, NVLink4 (NCCL 370 GB/s), PCIe 5.0, 8x400 Gb/s IB per node (NCCL 48 GB/s per "
     "GPU)",
     8, 80.0, 3350.0, 256.0, 63.0, 370.0, 48.0, 25.0},
    {"h200", "H200-SXM-141GB", "NVIDIA H200",
     "DGX H200: 141 GB HBM3e at 4800 GB/s, NVLink4 (NCCL 370 GB/s), PCIe 5.0, 8x400 Gb/s IB per node (NCCL 48 GB/s per "
     "GPU)",
     8, 141.0, 4800.0, 256.0, 63.0, 370.0, 48.0, 25.0},
};

constexpr double kInterLatencyUs = 50.0;  // NCCL all-to-all floor across nodes (at least)

std::vector<ParamSpec> gpu_params(const NodeSheet& s) {
  auto num = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  return {
      {"nodes", ParamType::kInt, "1", 1, 4096, {}, "number of hosts"},
      {"gpus_per_node", ParamType::kInt, std::to_string(s.gpus_per_node), 1, 64, {}, "devices per host"},
      {"hbm_gib",
       ParamType::kFloat,
       num(s.hbm_gib),
       0.0,
       1e6,
       {},
       "device memory available to embeddings per device, GiB (the papers' 'GB')"},
      {"uvm_gib",
       ParamType::kFloat,
       num(s.uvm_gib),
       0.0,
       1e7,
       {},
       "host memory available to embeddings per device through UVM, GiB"},
      {"intra_host_gbps",
       ParamType::kFloat,
       num(s.intra_gbps),
       1e-3,
       kMaxGbps,
       {},
       "all-to-all bandwidth per device inside a host, GB/s (NVLink or PCIe; NCCL's bus bandwidth)"},
      {"inter_host_gbps",
       ParamType::kFloat,
       num(s.inter_gbps),
       1e-3,
       kMaxGbps,
       {},
       "all-to-all bandwidth per device across hosts, GB/s (the host's NICs over its devices; another NIC: "
       "mixed hardware, docs/data.md)"},
  };
}

Topology build_gpu(const NodeSheet& s, const Params& p) {
  Topology t;
  t.device_kind = s.device_kind;
  t.devices_per_host = static_cast<int>(p.get_int("gpus_per_node"));
  const auto nodes = p.get_int("nodes");
  Device d;
  d.hbm_bytes = static_cast<std::int64_t>(std::llround(p.get_float("hbm_gib") * kGiB));
  d.uvm_bytes = static_cast<std::int64_t>(std::llround(p.get_float("uvm_gib") * kGiB));
  d.hbm_gbps = s.hbm_gbps;
  d.uvm_gbps = s.uvm_gbps;
  t.devices.assign(static_cast<std::size_t>(nodes * t.devices_per_host), d);
  t.intra_host_gbps = p.get_float("intra_host_gbps");
  t.inter_host_gbps = p.get_float("inter_host_gbps");
  t.a2a_latency_us = nodes > 1 ? std::max(kInterLatencyUs, s.a2a_latency_us) : s.a2a_latency_us;
  return t;
}

// The `cpu` preset stands for this kind of machine: "devices" are shares of one host, timed in
// turn by the cpu backend. Memory figures are typical of a 2-core cloud VM (streaming reads 10-17
// GB/s, fbgemm-dlrm-data.md §5.3). The all-to-all figures are measured here: `mpirun -n 4
// embshard profile comm` on the project's 2-core VM moves 1.2-1.3 GB/s per rank (OpenMPI shared
// memory, docs/benchmarks.md), so the link model uses 1.3 GB/s.
Topology build_cpu(const Params& p) {
  Topology t;
  t.device_kind = "cpu";
  const auto n = p.get_int("devices");
  t.devices_per_host = static_cast<int>(n);
  Device d;
  d.hbm_bytes = static_cast<std::int64_t>(std::llround(p.get_float("mem_gib") * kGiB));
  d.uvm_bytes = 0;
  d.hbm_gbps = 12.0;
  d.uvm_gbps = 12.0;
  t.devices.assign(static_cast<std::size_t>(n), d);
  t.intra_host_gbps = 1.3;
  t.inter_host_gbps = 1.3;
  t.a2a_latency_us = 10.0;
  return t;
}

Registry<Topology> build_registry() {
  Registry<Topology> r("topology preset");
  for (const NodeSheet& s : kSheets) {
    r.add({s.name, s.describe, gpu_params(s)},
          [&s](const Params& p, const Context&) { return std::make_unique<Topology>(build_gpu(s, p)); });
  }
  r.add({"cpu",
         "this machine's cores, one share per device, timed in turn by the cpu backend",
         {{"devices", ParamType::kInt, "4", 1, 4096, {}, "number of devices"},
          {"mem_gib", ParamType::kFloat, "4", 0.0, 1e6, {}, "memory available to embeddings per device, GiB"}}},
        [](const Params& p, const Context&) { return std::make_unique<Topology>(build_cpu(p)); });
  return r;
}

}  // namespace

const Registry<Topology>& topology_registry() {
  static const Registry<Topology> registry = build_registry();
  return registry;
}

std::vector<std::string> topology_preset_names() {
  std::vector<std::string> names;
  for (const RegistryEntryInfo& info : topology_registry().list()) names.push_back(info.name);
  return names;
}

std::string preset_for_gpu(const std::string& cuda_name) {
  std::string known;
  for (const NodeSheet& s : kSheets) {
    if (cuda_name == s.cuda_name) return s.name;
    known += detail::concat(known.empty() ? "" : ", ", "'", s.cuda_name, "' (", s.name, ")");
  }
  EMBSHARD_THROW("no topology preset describes the GPU '", cuda_name, "'; known GPUs: ", known);
}

bool Topology::alike(int d, int e) const {
  const Device &a = devices[static_cast<std::size_t>(d)], &b = devices[static_cast<std::size_t>(e)];
  return a.hbm_bytes == b.hbm_bytes && a.uvm_bytes == b.uvm_bytes && a.hbm_gbps == b.hbm_gbps &&
         a.uvm_gbps == b.uvm_gbps && intra_gbps(d) == intra_gbps(e) && inter_gbps(d) == inter_gbps(e);
}

int Topology::first_unlike_device() const {
  for (int d = 1; d < num_devices(); ++d) {
    if (!alike(d, 0)) return d;
  }
  return -1;
}

double Topology::slowest_intra_gbps() const {
  if (devices.empty()) return intra_host_gbps;
  double slowest = intra_gbps(0);
  for (int d = 1; d < num_devices(); ++d) slowest = std::min(slowest, intra_gbps(d));
  return slowest;
}

double Topology::slowest_inter_gbps() const {
  if (devices.empty()) return inter_host_gbps;
  double slowest = inter_gbps(0);
  for (int d = 1; d < num_devices(); ++d) slowest = std::min(slowest, inter_gbps(d));
  return slowest;
}

bool Topology::uniform_links() const {
  return std::all_of(devices.begin(), devices.end(), [&](const Device& d) {
    return (d.intra_host_gbps <= 0 || d.intra_host_gbps == intra_host_gbps) &&
           (d.inter_host_gbps <= 0 || d.inter_host_gbps == inter_host_gbps);
  });
}

void settle_host_links(Topology& topology) {
  for (int d = 0; d < topology.num_devices(); ++d) {
    Device& device = topology.devices[static_cast<std::size_t>(d)];
    device.intra_host_gbps = topology.intra_gbps(d), device.inter_host_gbps = topology.inter_gbps(d);
  }
  topology.intra_host_gbps = topology.slowest_intra_gbps();
  topology.inter_host_gbps = topology.slowest_inter_gbps();
  if (topology.uniform_links()) {  // every device alike: the topology's figures say it all
    for (Device& device : topology.devices) device.intra_host_gbps = device.inter_host_gbps = 0.0;
  }
}

bool Topology::devices_interchangeable() const { return first_unlike_device() < 0 && num_hosts() == 1; }

Topology make_topology(const std::string& spec) {
  const Context ctx;
  Topology t = *topology_registry().create(spec, ctx);
  t.name = topology_registry().canonical(spec);
  return t;
}

namespace {

/** "" if every host's devices share their link figures (each is positive: a device's own, or the
 *  topology's, checked before). */
std::string find_error_in_host_links(const Topology& t, const std::string& at) {
  if (t.uniform_links()) return "";
  const auto gbps = [](double v) { return detail::concat(v, " GB/s"); };
  for (int d = 0; d < t.num_devices(); ++d) {
    const int first = t.host_of(d) * t.devices_per_host;
    const std::string device = at + " device " + std::to_string(d);
    if (t.intra_gbps(d) != t.intra_gbps(first) || t.inter_gbps(d) != t.inter_gbps(first))
      return detail::concat(device, ": its links (intra_host_gbps ", gbps(t.intra_gbps(d)), ", inter_host_gbps ",
                            gbps(t.inter_gbps(d)), ") differ from device ", first, "'s on its host (",
                            gbps(t.intra_gbps(first)), ", ", gbps(t.inter_gbps(first)),
                            "): a host's devices share its links");
  }
  return "";
}

}  // namespace

std::string find_error_in_topology(const Topology& t, const std::string& where) {
  const std::string at = where + ": topology";
  if (t.devices.empty()) return at + " has no devices";
  if (static_cast<std::int64_t>(t.devices.size()) > kMaxDevices)
    return at + " has " + std::to_string(t.devices.size()) + " devices, more than " + std::to_string(kMaxDevices);
  if (t.devices_per_host < 1) return at + ": devices_per_host must be at least 1";
  if (t.num_devices() > t.devices_per_host && t.num_devices() % t.devices_per_host != 0)
    return at + ": devices_per_host " + std::to_string(t.devices_per_host) + " does not divide its " +
           std::to_string(t.num_devices()) + " devices (hosts must be the same size)";
  const auto bad_gbps = [](double v) { return !(v >= 0 && v <= kMaxGbps); };  // NaN too
  for (std::size_t d = 0; d < t.devices.size(); ++d) {
    const Device& dev = t.devices[d];
    const std::string device = at + " device " + std::to_string(d);
    if (dev.hbm_bytes < 0 || dev.uvm_bytes < 0) return device + ": negative memory";
    if (dev.hbm_bytes > kMaxDeviceBytes || dev.uvm_bytes > kMaxDeviceBytes)
      return device + ": hbm_bytes / uvm_bytes must be at most 2^44 (16 TiB)";
    if (!(dev.hbm_gbps > 0) || bad_gbps(dev.hbm_gbps)) return device + ": hbm_gbps must be positive and at most 1e6";
    if (bad_gbps(dev.uvm_gbps)) return device + ": uvm_gbps must lie in [0, 1e6]";
    if (dev.uvm_bytes > 0 && !(dev.uvm_gbps > 0))
      return device + ": uvm_gbps must be positive when uvm memory is given";
    if (bad_gbps(dev.intra_host_gbps)) return device + ": intra_host_gbps must lie in [0, 1e6] (0: the topology's)";
    if (bad_gbps(dev.inter_host_gbps)) return device + ": inter_host_gbps must lie in [0, 1e6] (0: the topology's)";
  }
  if (!(t.intra_host_gbps > 0) || bad_gbps(t.intra_host_gbps))
    return at + ": intra_host_gbps must be positive and at most 1e6";
  if (bad_gbps(t.inter_host_gbps)) return at + ": inter_host_gbps must lie in [0, 1e6]";
  if (t.num_hosts() > 1 && !(t.inter_host_gbps > 0))
    return at + ": inter_host_gbps must be positive with several hosts";
  if (!(t.a2a_latency_us >= 0 && t.a2a_latency_us <= kMaxLatencyUs))
    return at + ": a2a_latency_us must lie in [0, 1e9]";
  return find_error_in_host_links(t, at);
}

}  // namespace embshard

namespace embshard {
namespace {

/** A number as a spec value that parses back to the same double (17 significant digits). */
std::string exact_number(double value) {
  std::ostringstream o;
  o.precision(17);
  o << value;
  return o.str();
}

/** The preset's spec with `changes` applied, built; nullopt for a custom topology. */
std::optional<Topology> edited_preset(const Topology& topology,
                                      const std::vector<std::pair<std::string, std::string>>& changes) {
  if (topology.name.empty() || topology.name == "custom") return std::nullopt;
  Spec spec = parse_spec(topology.name);
  for (const auto& [key, value] : changes) set_spec_value(spec, key, value);
  Topology edited = make_topology(format_spec(spec));
  edited.half_duplex = topology.half_duplex;  // not in the spec: carried over
  return edited;
}

/**
 * Mixed hardware resized (topology.h `device_counts`): the devices kept, those before the trailing
 * hosts whose every device is like the last one (the kind that is added or removed); nullopt where
 * all devices are alike. Error naming the device where the hosts cannot be told apart so: one
 * host, or a last host of several kinds.
 */
std::optional<int> kept_devices(const Topology& topology) {
  if (topology.first_unlike_device() < 0) return std::nullopt;
  const int last = topology.num_devices() - 1;
  const int host = topology.host_size();
  int kept = topology.num_devices();
  while (kept > 0 && topology.alike(kept - 1, last)) --kept;
  const int unlike = kept - 1;  // the last device of another kind
  EMBSHARD_CHECK(topology.num_hosts() > 1, "topology: device ", topology.first_unlike_device(),
                 " differs from device 0; changing the number of devices needs devices of one kind, or whole ",
                 "hosts of another kind at the end");
  EMBSHARD_CHECK(topology.host_of(unlike) != topology.host_of(last), "topology: device ", unlike,
                 " differs from device ", last, " on the last host; changing the number of devices needs whole ",
                 "hosts of one kind at the end, the kind added or taken away");
  return (kept + host - 1) / host * host;
}

bool is_cpu_preset(const Topology& topology) { return topology.name.rfind("cpu", 0) == 0; }

}  // namespace

namespace {

/** Most devices and hosts the `cpu` and GPU presets take (topology.cpp's parameters). */
constexpr int kMostCpuDevices = 4096;
constexpr std::int64_t kMostNodes = 4096;

/** The devices on one host as device_counts counts them: all of a `cpu` preset's. */
int host_of_counts(const Topology& topology) {
  return is_cpu_preset(topology) ? kMostCpuDevices : std::max(topology.devices_per_host, 1);
}

}  // namespace

std::vector<int> device_counts(const Topology& topology, int lo, int hi) {
  if (const std::optional<int> kept = kept_devices(topology)) {  // whole hosts of the last kind
    const int host = topology.host_size();
    std::vector<int> counts;
    for (std::int64_t n = *kept; n <= std::min<std::int64_t>(hi, kMaxDevices); n += host) {
      if (n >= lo) counts.push_back(static_cast<int>(n));
    }
    return counts;
  }
  const int host = host_of_counts(topology);
  const bool preset = !topology.name.empty() && topology.name != "custom";
  const std::int64_t limit = is_cpu_preset(topology) ? kMostCpuDevices : preset ? kMostNodes * host : kMaxDevices;
  const int most = static_cast<int>(std::min<std::int64_t>(hi, limit));
  std::vector<int> counts;
  for (int n = std::max(lo, 1); n <= std::min(host, most); ++n) counts.push_back(n);
  for (std::int64_t n = 2 * static_cast<std::int64_t>(host); n <= most; n += host) {
    if (n >= lo) counts.push_back(static_cast<int>(n));
  }
  return counts;
}

std::string describe_device_counts(const Topology& topology) {
  if (const std::optional<int> kept = kept_devices(topology)) {
    return detail::concat(*kept, " (the hosts before the last kind's), then whole hosts of ", topology.host_size(),
                          " like device ", topology.num_devices() - 1);
  }
  const int host = host_of_counts(topology);
  if (is_cpu_preset(topology)) return "1 to " + std::to_string(host) + " on one host";
  return "1 to " + std::to_string(host) + " on one host, then whole hosts of " + std::to_string(host);
}

namespace {

/** `topology` with its first `kept` devices and then copies of its last up to `devices` (whole
 *  hosts), its links settled (settle_host_links). */
Topology with_last_kind(const Topology& topology, int kept, int devices) {
  Topology t = topology;
  const Device last = topology.devices.back();
  t.devices.resize(static_cast<std::size_t>(kept));
  t.devices.resize(static_cast<std::size_t>(devices), last);
  settle_host_links(t);
  return t;
}

}  // namespace

Topology topology_with_devices(const Topology& topology, int devices) {
  const std::vector<int> counts = device_counts(topology, devices, devices);
  EMBSHARD_CHECK(!counts.empty(), "topology: ", devices, " devices is not a size this topology comes in (",
                 describe_device_counts(topology), ")");
  const int host = std::max(topology.devices_per_host, 1);
  const bool one_host = devices <= host;
  const std::string n = std::to_string(devices);
  const auto preset = is_cpu_preset(topology)
                          ? edited_preset(topology, {{"devices", n}})
                          : edited_preset(topology, {{"nodes", one_host ? "1" : std::to_string(devices / host)},
                                                     {"gpus_per_node", one_host ? n : std::to_string(host)}});
  if (preset) return *preset;
  if (const std::optional<int> kept = kept_devices(topology)) return with_last_kind(topology, *kept, devices);
  Topology t = topology;
  t.devices.assign(static_cast<std::size_t>(devices), topology.devices.front());
  return t;
}

Topology topology_with_hbm(const Topology& topology, std::int64_t hbm_bytes) {
  EMBSHARD_CHECK(hbm_bytes >= 0 && hbm_bytes <= kMaxDeviceBytes, "topology: ", hbm_bytes,
                 " bytes of HBM per device is outside [0, 2^44]");
  const std::string gib = exact_number(static_cast<double>(hbm_bytes) / kGiB);
  const auto preset = edited_preset(topology, {{is_cpu_preset(topology) ? "mem_gib" : "hbm_gib", gib}});
  if (preset) return *preset;
  Topology t = topology;  // a custom topology or a mix: every device, its other figures kept
  for (Device& d : t.devices) d.hbm_bytes = hbm_bytes;
  return t;
}

}  // namespace embshard
