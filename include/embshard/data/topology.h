#pragma once
/**
 * @file topology.h
 * @brief `Topology`: the devices a plan places shards on, their memory, and the links between them.
 *
 * Memory figures are what is *available to embedding tables* (a task that reserves room for
 * activations lowers them). Bandwidths are in GB/s (10^9 bytes per second) per device and per
 * direction; latencies in microseconds. Devices are numbered 0..N-1 and packed onto hosts in
 * order: device d lives on host d / devices_per_host. Hosts are the same size: the devices fill
 * them (N a multiple of devices_per_host), or there is one host of N < devices_per_host devices.
 *
 * Named presets (`topology_registry()`, `embshard list`) take their figures from vendor data
 * sheets; each preset's doc line in topology.cpp cites them. A preset is a spec string such as
 * `a100:nodes=2,hbm_gb=4` — `nodes` multiplies the node, `hbm_gb` / `uvm_gb` override the memory
 * available per device (the papers cap it, e.g. NeuroShard's 4 GB), `intra_host_gbps` /
 * `inter_host_gbps` its links (a node with another NIC: `h100:inter_host_gbps=25`).
 */
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/registry.h"

namespace embshard {

/** One accelerator (or one CPU socket share for the `cpu` preset). */
struct Device {
  std::int64_t hbm_bytes = 0;  ///< fast device memory available to embeddings
  std::int64_t uvm_bytes = 0;  ///< host memory reachable through UVM, available to embeddings
  double hbm_gbps = 0.0;       ///< device-memory bandwidth, GB/s
  double uvm_gbps = 0.0;       ///< device <- host bandwidth for UVM reads, GB/s
  /** This device's own links where its host's differ from the topology's (mixed hardware: each
   *  host keeps its preset's NVLink and NIC figures); 0: the topology's. A host's devices share
   *  its figures. Read them through Topology::intra_gbps / inter_gbps. */
  double intra_host_gbps = 0.0;
  double inter_host_gbps = 0.0;
};

struct Topology {
  std::string name;         ///< canonical preset spec, or "custom"
  std::string device_kind;  ///< e.g. "A100-SXM4-80GB", "cpu"
  std::vector<Device> devices;
  int devices_per_host = 1;  ///< devices d and e share a host iff d/dph == e/dph
  /// all-to-all bandwidth per device inside a host, GB/s, of every device that names none (Device)
  double intra_host_gbps = 0.0;
  /// all-to-all bandwidth per device across hosts, GB/s, of every device that names none (Device)
  double inter_host_gbps = 0.0;
  double a2a_latency_us = 0.0;  ///< fixed cost of one all-to-all collective, µs
  /** Whether a device's sends and receives share its link: each link then takes (sent +
   *  received) / GB/s rather than the larger of the two (cost/link_model.h). Full duplex is what
   *  NVLink, PCIe and NICs do; TorchRec's gloo ranks on one CPU copy both ways with the same
   *  cores (docs/judge.md, "TorchRec's CPU runtime"). Task files: `"half_duplex": true`. */
  bool half_duplex = false;

  [[nodiscard]] int num_devices() const { return static_cast<int>(devices.size()); }
  [[nodiscard]] int num_hosts() const {
    return devices_per_host > 0 ? (num_devices() + devices_per_host - 1) / devices_per_host : 0;
  }
  [[nodiscard]] bool same_host(int d, int e) const { return d / devices_per_host == e / devices_per_host; }
  [[nodiscard]] int host_of(int device) const { return device / devices_per_host; }
  /** Devices on each host (every host has as many; topology.h file comment). */
  [[nodiscard]] int host_size() const { return std::min(devices_per_host, num_devices()); }
  /** Device d's link bandwidths, GB/s: its own (Device::intra_host_gbps / inter_host_gbps) or
   *  the topology's. */
  [[nodiscard]] double intra_gbps(int device) const {
    const double own = devices[static_cast<std::size_t>(device)].intra_host_gbps;
    return own > 0 ? own : intra_host_gbps;
  }
  [[nodiscard]] double inter_gbps(int device) const {
    const double own = devices[static_cast<std::size_t>(device)].inter_host_gbps;
    return own > 0 ? own : inter_host_gbps;
  }
  /** The slowest device's link bandwidths, GB/s (each device's own or the topology's): what a
   *  collective that passes every host in turn runs at (the ring all-reduce, cost/link_model.h),
   *  and the one figure TorchRec takes. */
  [[nodiscard]] double slowest_intra_gbps() const;
  [[nodiscard]] double slowest_inter_gbps() const;
  /** Whether every device has the topology's link figures (no host names its own). */
  [[nodiscard]] bool uniform_links() const;
  /** Whether all devices are interchangeable: the same figures, one host (search may then
   *  relabel devices freely: exhaustive enumeration visits each partition once). */
  [[nodiscard]] bool devices_interchangeable() const;
  /** Whether devices d and e have the same memory and bandwidths, links included. */
  [[nodiscard]] bool alike(int d, int e) const;
  /** The first device whose memory or bandwidths (links included) differ from device 0's; −1
   *  when all are alike. */
  [[nodiscard]] int first_unlike_device() const;
};

/** Most devices in a topology: 2^18 (the presets' 4096 nodes × 64 devices). */
inline constexpr std::int64_t kMaxDevices = std::int64_t{1} << 18;
/**
 * Largest HBM or UVM capacity of one device: 2^44 bytes (16 TiB, far above any GPU's HBM or
 * host share), so HBM + UVM of a device and Σ over kMaxDevices (≤ 2^62) are exact in int64.
 */
inline constexpr std::int64_t kMaxDeviceBytes = std::int64_t{1} << 44;
/** Largest bandwidth (GB/s) and latency (µs) a topology may name. */
inline constexpr double kMaxGbps = 1e6;
inline constexpr double kMaxLatencyUs = 1e9;

/**
 * "" if `topology` is usable (1 to kMaxDevices devices, memory in [0, kMaxDeviceBytes], finite
 * positive bandwidths up to kMaxGbps, a latency in [0, kMaxLatencyUs]), else the first problem.
 */
[[nodiscard]] std::string find_error_in_topology(const Topology& topology, const std::string& where);

/** The registry of named hardware presets. */
[[nodiscard]] const Registry<Topology>& topology_registry();

/** The presets' names, in registry order (the choices of a protocol's `preset`). */
[[nodiscard]] std::vector<std::string> topology_preset_names();

/**
 * The name of the GPU preset whose GPU CUDA reports as `cuda_name` (e.g. "NVIDIA H200" → "h200");
 * throws Error naming the GPU and listing the known ones.
 */
[[nodiscard]] std::string preset_for_gpu(const std::string& cuda_name);

/** Builds a preset from its spec string (e.g. "h100:nodes=2"); throws Error listing presets. */
[[nodiscard]] Topology make_topology(const std::string& spec);

/**
 * The device counts `topology_with_devices` accepts in [lo, hi], ascending: 1 to the host size
 * (one host), then whole hosts (multiples of the host size), up to what the preset takes (4096
 * nodes; the `cpu` preset, whose devices share one host: 4096 devices) or kMaxDevices. Mixed
 * hardware (hosts of several kinds) grows and shrinks by whole hosts of its last kind, the kind of
 * its last device: the hosts before the trailing hosts of that kind are kept, so the counts are
 * those devices, then each further host of the last kind (none of it included). Error naming
 * the device where a mix has one host, or a last host of several kinds.
 */
[[nodiscard]] std::vector<int> device_counts(const Topology& topology, int lo, int hi);

/** The sizes `device_counts` gives, for messages: "1 to 8 on one host, then whole hosts of 8". */
[[nodiscard]] std::string describe_device_counts(const Topology& topology);

/**
 * The same hardware with `devices` devices (one of `device_counts`): a preset's spec with its
 * `nodes` / `gpus_per_node` (`devices` for cpu) changed, so the task file still names the
 * preset; a custom topology with device 0 repeated; mixed hardware with its kept hosts and then
 * hosts of its last device's kind, each keeping its links (the topology's own figures the slowest
 * left; the all-to-all latency, the mix's largest, as it was). Error naming the count when it is
 * not one of `device_counts`, and naming the device where a mix cannot be resized by that rule.
 */
[[nodiscard]] Topology topology_with_devices(const Topology& topology, int devices);

/**
 * Puts a topology whose hosts may keep links of their own in its one form: every device's links
 * resolved (its own, or the topology's), the topology's figures the slowest of them, and every
 * device's own figures cleared where all are alike. Mixed hosts read from a task file and a mix
 * resized both end so.
 */
void settle_host_links(Topology& topology);

/**
 * The same hardware with `hbm_bytes` of HBM available to embeddings on every device (a preset's
 * `hbm_gib` / `mem_gib` changed; on a custom topology or a mix, every device's, its other figures
 * kept). Error when it is outside [0, kMaxDeviceBytes].
 */
[[nodiscard]] Topology topology_with_hbm(const Topology& topology, std::int64_t hbm_bytes);

}  // namespace embshard
