// The `sim` backend's analytic model (analytic.h).
#include "embshard/cost/analytic.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/fingerprint_json.h"
#include "core/json_reader.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/nnls.h"

namespace embshard {
namespace {

/** Share of a table's lookups served by its `hot_rows` hottest rows (ICDF, linear in between). */
double table_hot_share(const TableStats& stats, double hot_rows) {
  if (stats.icdf.size() != static_cast<std::size_t>(kNumIcdfSteps)) {
    if (hot_rows >= static_cast<double>(stats.num_distinct)) return 1.0;
    return hot_rows / static_cast<double>(std::max<std::int64_t>(stats.num_rows, 1));
  }
  // Every row the ICDF has seen (a profile's ICDF can count more rows than one batch's distinct).
  if (hot_rows >= stats.icdf.back()) return 1.0;
  double previous_rows = 0.0;
  for (int k = 0; k < kNumIcdfSteps; ++k) {
    const double rows = stats.icdf[static_cast<std::size_t>(k)];
    if (rows > static_cast<double>(hot_rows)) {
      const double within = rows > previous_rows ? (hot_rows - previous_rows) / (rows - previous_rows) : 0.0;
      return (k + within) / kNumIcdfSteps;
    }
    previous_rows = rows;
  }
  return 1.0;
}

/**
 * Share of a shard's lookups served by its `hbm_rows` hottest rows, the shard holding `row_share`
 * of the table's rows (analytic.h: a row range is a uniform sample of the table's rows, so its
 * hottest k rows serve what the table's hottest k / row_share rows serve).
 */
double hot_share(const TableStats& stats, double row_share, std::int64_t hbm_rows) {
  if (hbm_rows < 0 || row_share <= 0.0) return 1.0;
  const double shard_rows = row_share * static_cast<double>(stats.num_rows);
  if (static_cast<double>(hbm_rows) >= shard_rows - 0.5) return 1.0;  // every row of the shard
  return table_hot_share(stats, static_cast<double>(hbm_rows) / row_share);
}

/** Bytes a data-parallel table's dense optimizer moves per byte of the table (analytic.h). */
constexpr double kDenseUpdateTraffic = 9.22;

// This project's 2-core VM (Intel Xeon, 480 MiB L3), fitted by `embshard profile calibrate` on 200
// of 300 compute samples (batch 8192, seed 1; docs/benchmarks.md, "sim calibration"); held-out
// relative error: median 15% forward, 10% backward. Units: ms per call, per table, per lookup,
// per byte. The uvm coefficient is not fitted and is 0: the cpu backend has no UVM tier (all rows
// are host memory, already paid for as miss/hit bytes). The fit puts no cost on `calls`: on two
// cores a fused call is not cheaper than its tables run alone (measured: 1.18× the sum of
// singles, docs/benchmarks.md), so this model makes fusion cost-neutral on `cpu`.
constexpr SimCoefficients kCpuForward{0, 0.001289, 2.836e-06, 1.517e-07, 1.319e-08, 1.026e-07, 4.726e-11, 0};
constexpr SimCoefficients kCpuBackward{0, 0.09304, 2.025e-05, 2.584e-07, 3.194e-08, 3.481e-08, 1.546e-11, 0};
constexpr std::int64_t kCpuCacheBytes = 503316480;

// An NVIDIA H200 (this workplace's lent machine, 16-core Xeon host), fitted by `embshard profile
// calibrate` to compute samples of this project's cuda backend (batch 8192, 2026-11-26;
// docs/benchmarks.md, "The GPU: an H200"). Forward: 150 of the 227 samples of seeds 0 and 1
// (held-out median error 37%). Backward: 20 of the 31 samples of seed 2, taken after the backward
// began summing hot rows in pieces (held-out median error 6%); the forward kernel did not change.
// No sample had a UVM tier: the uvm coefficient is the roofline's.
constexpr SimCoefficients kH200Forward{0.006355, 0.001983, 2.231e-07, 7.935e-10, 0, 0, 1.169e-10, 0};
constexpr SimCoefficients kH200Backward{0, 0.05498, 4.448e-07, 0, 0, 1.241e-08, 0, 0};

// The seeds' RTX 2080 Ti (papers 000 and 003), fitted by `embshard profile calibrate --figures
// models/calibration/2080ti-papers.json --tasks 20 --seed 1` to 38 of the papers' 95 published
// figures (NeuroShard Table 1's heuristics, DreamShard Tables 4, 6, 7 and its fusion speedup);
// docs/judge.md lists every figure, published against judged, fitted or held out, and what pins
// each coefficient. The figures are forward + backward totals: every term's backward is 4× its
// forward, the published TBE evidence (FBGEMM's benchmark 3.2×, torchrec PR #4757 4.9×). The fit
// charges calls, tables, lookups and the rows read (miss_bytes), which carry the forward's and the
// backward's dimension-dependent cost alike; the update bytes (backward only), hit and output
// bytes are not fitted (docs/judge.md says why). UVM bytes: the data
// sheet's PCIe.
constexpr SimCoefficients k2080TiForward{0.1425, 0.08093, 2.094e-07, 2.035e-09, 0, 0, 0, 6.349e-08};
constexpr SimCoefficients k2080TiBackward{0.5699, 0.3237, 8.374e-07, 8.139e-09, 0, 0, 2.319e-09, 6.349e-08};
constexpr double k2080TiHbmGbps = 616.0;

/**
 * L2 size of the GPU presets' devices (data sheets; the H200's as CUDA reported it on the H200
 * this project calibrated on), by device kind; 40 MB otherwise.
 */
std::int64_t gpu_l2_bytes(const std::string& device_kind) {
  if (device_kind.find("H200") != std::string::npos) return 60 << 20;
  if (device_kind.find("2080") != std::string::npos) return 5632 << 10;
  if (device_kind.find("V100") != std::string::npos) return 6 << 20;
  if (device_kind.find("H100") != std::string::npos) return 50 << 20;
  return 40 << 20;
}

/**
 * The host link the UVM coefficient is per byte of: device 0's, or where it has none (uvm_gbps 0:
 * no UVM memory, data/topology.h) the fastest device's; 0 where no device has one.
 */
double uvm_reference_gbps(const Topology& topology) {
  double gbps = topology.devices.front().uvm_gbps;
  if (gbps > 0) return gbps;
  for (const Device& d : topology.devices) gbps = std::max(gbps, d.uvm_gbps);
  return gbps;
}

}  // namespace

SimHardware sim_roofline(const Topology& topology) {
  const Device& device = topology.devices.front();
  const double hbm_ms_per_byte = 1e-6 / (0.7 * device.hbm_gbps);  // 70% of peak for gathers
  const double uvm_gbps = uvm_reference_gbps(topology);
  const double uvm_ms_per_byte = uvm_gbps > 0 ? 1e-6 / uvm_gbps : 0.0;  // 0: no UVM rows anywhere
  SimHardware hw;
  hw.name = topology.device_kind + " roofline (data sheet, not calibrated)";
  hw.cache_bytes = gpu_l2_bytes(topology.device_kind);
  // fw: launch 10 µs, 1 µs per table; each lookup reads its index and offsets and costs about
  // two 32-byte sectors of scheduling and partial-sector waste.
  hw.fw = {0.010,           0.001, 64.0 * hbm_ms_per_byte, hbm_ms_per_byte, hbm_ms_per_byte / 3.0,
           hbm_ms_per_byte, 0.0,   uvm_ms_per_byte};
  // bw: radix sort of (row, position) pairs (~4 passes of 16 bytes per lookup), gradient reads,
  // and the fused update's read + write of each distinct row.
  hw.bw = {0.030,           0.002,           128.0 * hbm_ms_per_byte, hbm_ms_per_byte, hbm_ms_per_byte / 3.0,
           hbm_ms_per_byte, hbm_ms_per_byte, uvm_ms_per_byte};
  return hw;
}

namespace {

/**
 * A device's features in the terms of device 0's hardware, whose coefficients the model holds
 * (mixed hardware, data/topology.h): every term but the calls scales with device 0's HBM bandwidth
 * over this device's, as the GPU judges scale from the 2080 Ti's, and the UVM term with the
 * reference host link's (`uvm_reference_gbps`) over this device's. Devices of one kind: every
 * factor is exactly 1.
 */
SimFeatures on_device(SimFeatures f, const Task& task, int device) {
  const auto& devices = task.topology.devices;
  if (device <= 0 || static_cast<std::size_t>(device) >= devices.size()) return f;
  const Device &ref = devices.front(), &dev = devices[static_cast<std::size_t>(device)];
  // A device with no host link for UVM (uvm_gbps 0, data/topology.h) holds no UVM rows: factor 1.
  const double hbm = ref.hbm_gbps / dev.hbm_gbps,
               uvm = dev.uvm_gbps > 0 ? uvm_reference_gbps(task.topology) / dev.uvm_gbps : 1.0;
  for (int i = kSimTables; i < kSimUvmBytes; ++i) f[i] *= hbm;
  f[kSimUvmBytes] *= uvm;
  return f;
}

class SimModel final : public ComputeModel {
 public:
  explicit SimModel(SimHardware hardware) : hardware_(std::move(hardware)) {}
  [[nodiscard]] std::string spec() const override { return "sim"; }
  [[nodiscard]] CostSource source() const override { return CostSource::kModelled; }
  [[nodiscard]] std::string detail() const override { return "sim: " + hardware_.name; }

  [[nodiscard]] DeviceCompute device_compute(const Task& task, std::span<const PlacedShard> shards,
                                             const Context&) override {
    const SimFeatures f = on_device(sim_device_features(task, shards, hardware_.cache_bytes), task,
                                    shards.empty() ? 0 : shards.front().shard.device);
    return {sim_pass_ms(hardware_.fw, f), sim_pass_ms(hardware_.bw, f)};
  }

  // Every feature but `calls` is a sum over the device's tables (sim_features).
  [[nodiscard]] bool is_additive() const override { return true; }
  [[nodiscard]] DeviceCompute shard_compute(const Task& task, const PlacedShard& shard) override {
    SimFeatures f = on_device(sim_device_features(task, std::span<const PlacedShard>(&shard, 1), hardware_.cache_bytes),
                              task, shard.shard.device);
    f[kSimCalls] = 0.0;  // the device's calls are device_overhead()'s (compute_model.h)
    return {sim_pass_ms(hardware_.fw, f), sim_pass_ms(hardware_.bw, f)};
  }
  [[nodiscard]] DeviceCompute device_overhead() const override {
    return {hardware_.fw[kSimCalls], hardware_.bw[kSimCalls]};
  }

 private:
  SimHardware hardware_;
};

}  // namespace

const std::array<const char*, kNumSimFeatures>& sim_feature_names() {
  static constexpr std::array<const char*, kNumSimFeatures> names{
      "calls", "tables", "lookups", "miss_bytes", "hit_bytes", "output_bytes", "update_bytes", "uvm_bytes"};
  return names;
}

namespace {

/** One table of a shard as sim_features reads it: a SimTable's fields, its statistics by reference
 *  (a shard's are its table's, shared, never copied: the search costs millions of shards). */
struct TableTerms {
  const TableStats* stats = nullptr;
  int cols = 0;
  int bytes_per_element = 4;
  double row_share = 1.0;
  std::int64_t hbm_rows = -1;
  int replicas = 0;
  bool pooled = true;
};

TableTerms terms_of(const SimTable& t) {
  return {&t.stats, t.cols, t.bytes_per_element, t.row_share, t.hbm_rows, t.replicas, t.pooled};
}

TableTerms terms_of(const Task& task, const PlacedShard& p) {
  const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
  return {&spec.stats,
          p.shard.num_cols(),
          bytes_per_element(spec.dtype),
          spec.row_share(p.shard.num_rows()),
          p.shard.hbm_rows < 0 ? -1 : p.shard.hbm_rows,
          p.replicas,
          spec.pooled};
}

/** The output_bytes feature of one table (file comment): B · cols · o_t · 4, on a copy's share. */
double output_bytes(const TableTerms& t, std::int64_t batch_size) {
  const double batch_share = t.replicas > 0 ? 1.0 / t.replicas : 1.0;
  const double outputs_per_sample = t.pooled ? 1.0 : t.stats->pooling_factor * t.row_share;
  return batch_share * static_cast<double>(batch_size) * t.cols * outputs_per_sample * 4.0;
}

/** The features of `tables` (a sum over them, but `calls`); `terms(table)` gives a TableTerms. */
template <typename Tables, typename Terms>
SimFeatures features_of(const Tables& tables, Terms terms, std::int64_t batch_size, std::int64_t cache_bytes) {
  SimFeatures f{};
  bool shards = false, copies = false;
  for (const auto& table : tables) {
    const TableTerms t = terms(table);
    const TableStats& stats = *t.stats;
    const double row_bytes = static_cast<double>(t.cols) * t.bytes_per_element;
    const double batch_share = t.replicas > 0 ? 1.0 / t.replicas : 1.0;
    (t.replicas > 0 ? copies : shards) = true;
    const double lookups = batch_share * t.row_share * static_cast<double>(stats.num_indices);
    const double distinct = t.replicas > 0 ? distinct_rows_in_share(stats, batch_share)
                                           : t.row_share * static_cast<double>(stats.num_distinct);
    const double reuse = std::max(0.0, lookups - distinct);
    const double working_set = distinct * row_bytes;
    const double evict =
        working_set > 0 ? std::clamp(1.0 - static_cast<double>(cache_bytes) / working_set, 0.0, 1.0) : 0.0;
    const double hot = hot_share(stats, t.row_share, t.hbm_rows);  // the HBM tier's share
    f[kSimTables] += 1.0;
    f[kSimLookups] += lookups;
    f[kSimMissBytes] += hot * row_bytes * (distinct + reuse * evict);
    f[kSimHitBytes] += hot * row_bytes * reuse * (1.0 - evict);
    f[kSimOutputBytes] += output_bytes(t, batch_size);
    f[kSimUpdateBytes] += t.replicas > 0 ? kDenseUpdateTraffic * row_bytes * static_cast<double>(stats.num_rows)
                                         : 2.0 * row_bytes * distinct;
    f[kSimUvmBytes] += row_bytes * lookups * (1.0 - hot);
  }
  f[kSimCalls] = (shards ? 1.0 : 0.0) + (copies ? 1.0 : 0.0);
  return f;
}

}  // namespace

SimFeatures sim_device_features(const Task& task, std::span<const PlacedShard> shards, std::int64_t cache_bytes) {
  return features_of(
      shards, [&task](const PlacedShard& p) { return terms_of(task, p); }, task.workload.batch_size, cache_bytes);
}

DeviceCompute sim_sequence_output_ms(const SimHardware& hardware, const Task& task,
                                     std::span<const PlacedShard> shards) {
  double as_sequence = 0.0, as_pooled = 0.0;  // the sequence shards' output bytes, and theirs if pooled
  for (const PlacedShard& p : shards) {
    if (task.workload.tables[static_cast<std::size_t>(p.table)].pooled) continue;
    TableTerms t = terms_of(task, p);
    as_sequence += output_bytes(t, task.workload.batch_size);
    t.pooled = true;
    as_pooled += output_bytes(t, task.workload.batch_size);
  }
  if (as_sequence == as_pooled) return {};
  SimFeatures extra{};
  extra[kSimOutputBytes] = as_sequence - as_pooled;
  return {sim_pass_ms(hardware.fw, extra), sim_pass_ms(hardware.bw, extra)};
}

SimFeatures sim_features(std::span<const SimTable> tables, std::int64_t batch_size, std::int64_t cache_bytes) {
  return features_of(
      tables, [](const SimTable& t) { return terms_of(t); }, batch_size, cache_bytes);
}

double sim_hbm_access_share(const TableStats& stats, std::int64_t shard_rows, std::int64_t hbm_rows) {
  const double row_share =
      static_cast<double>(shard_rows) / static_cast<double>(std::max<std::int64_t>(stats.num_rows, 1));
  return hot_share(stats, row_share, hbm_rows);
}

double sim_pass_ms(const SimCoefficients& c, const SimFeatures& f) {
  double ms = 0.0;
  for (int i = 0; i < kNumSimFeatures; ++i) ms += c[i] * f[i];
  return ms;
}

namespace {

/** `spec` as one shard: every row and column, all in HBM. */
TableTerms whole_table(const TableSpec& spec) {
  return {.stats = &spec.stats,
          .cols = spec.dim,
          .bytes_per_element = bytes_per_element(spec.dtype),
          .pooled = spec.pooled};
}

/** A pass's cost of the whole table with its calls left out, under a cache of `cache_bytes`. */
DeviceCompute whole_table_ms(const SimHardware& hw, const TableSpec& spec, std::int64_t batch,
                             std::int64_t cache_bytes) {
  const std::array<TableTerms, 1> one{whole_table(spec)};
  SimFeatures f = features_of(one, std::identity{}, batch, cache_bytes);
  f[kSimCalls] = 0.0;
  return {sim_pass_ms(hw.fw, f), sim_pass_ms(hw.bw, f)};
}

/**
 * The least a table's pieces cost in each pass, by their number (analytic.h, "Pieces and the
 * cache"): k pieces pay k per-table costs, and their re-reads miss rather than hit the cache in
 * a share between max(0, 1 − k / spread) and max(0, 1 − 1 / spread) (spread: the working set over
 * the cache; a piece of area share a evicts max(0, a − cache / working set) of the table's
 * re-reads, convex in a, so k equal pieces evict least and one piece of nearly all the most).
 * Where misses cost more than hits the least eviction is the cheapest, else the most. Calls are
 * left out.
 */
struct PieceFloors {
  DeviceCompute cached;               ///< the whole table with every re-read a hit
  DeviceCompute evictable;            ///< every re-read a miss, less every re-read a hit (may be < 0)
  double spread = 0.0;                ///< working set / cache; ∞ with no cache
  std::array<double, 2> per_table{};  ///< τ, forward and backward

  /** The least cost of k' ≥ k pieces, per pass: the cost is convex in k', least at 1, ⌊spread⌋ or ⌈spread⌉. */
  [[nodiscard]] DeviceCompute at_least(double k) const {
    const auto pass = [&](double cached_ms, double evictable_ms, double tau) {
      const auto cost = [&](double pieces) {
        const double evicted = std::max(0.0, 1.0 - (evictable_ms >= 0 ? pieces : 1.0) / spread);
        return cached_ms + (pieces - 1.0) * tau + evictable_ms * evicted;
      };
      double least = cost(k);
      if (std::isfinite(spread))
        least = std::min({least, cost(std::max(k, std::floor(spread))), cost(std::max(k, std::ceil(spread)))});
      return least;
    };
    return {pass(cached.fw_ms, evictable.fw_ms, per_table[0]), pass(cached.bw_ms, evictable.bw_ms, per_table[1])};
  }
};

/** The cheapest a table's forward and backward can cost in total, split in any way (see the header). */
struct TableFloors {
  DeviceCompute any;   ///< data-parallel copies included: the whole table, its re-reads all hits or all misses
  PieceFloors pieces;  ///< no copy: by the number of its pieces ("Pieces and the cache")
};

/** The floors of `spec`; with copies, one piece (on every device) can hit throughout. */
TableFloors table_floors(const SimHardware& hw, const TableSpec& spec, std::int64_t batch) {
  const DeviceCompute cached = whole_table_ms(hw, spec, batch, std::numeric_limits<std::int64_t>::max());
  const DeviceCompute evicted = whole_table_ms(hw, spec, batch, 0);
  const TableTerms t = whole_table(spec);
  const double working_set =
      static_cast<double>(t.stats->num_distinct) * static_cast<double>(t.cols) * t.bytes_per_element;
  PieceFloors pieces;
  pieces.cached = cached;
  pieces.evictable = {evicted.fw_ms - cached.fw_ms, evicted.bw_ms - cached.bw_ms};
  pieces.spread =
      hw.cache_bytes > 0 ? working_set / static_cast<double>(hw.cache_bytes) : std::numeric_limits<double>::infinity();
  pieces.per_table = {hw.fw[kSimTables], hw.bw[kSimTables]};
  return {{std::min(cached.fw_ms, evicted.fw_ms), std::min(cached.bw_ms, evicted.bw_ms)}, pieces};
}

/** Per byte of an exchange's total volume, the least the average device's intra-host (`intra`) or
 *  inter-host time grows when every byte goes once by all-to-all: device d sends 1/N of its bytes to
 *  each other device, (L − 1)/N of them inside its host of L devices and (N − L)/N across hosts.
 *  On half-duplex links (topology.h) twice that: every byte one device sends another receives, and
 *  a link carries both. */
struct PerByte {
  double intra = 0.0;
  double inter = 0.0;
  [[nodiscard]] double max() const { return std::max(intra, inter); }
};

PerByte exchange_per_byte(const Task& task) {
  const Topology& topo = task.topology;
  const int n = topo.num_devices();
  if (n <= 1) return {};
  const int per_host = std::max(topo.host_size(), 1);
  const double nn = static_cast<double>(n) * n;
  const double directions = topo.half_duplex ? 2.0 : 1.0;
  const auto per = [&](double share, double gbps) { return gbps > 0 ? directions * share / (gbps * 1e6) : 0.0; };
  return {per((per_host - 1) / nn, topo.intra_host_gbps),
          topo.num_hosts() > 1 ? per((n - per_host) / nn, topo.inter_host_gbps) : 0.0};
}

/**
 * Some device's time grows at least this much per byte of total volume: the links run
 * concurrently, so the slowest device needs at least the average device's intra-host bytes / intra
 * bandwidth and its inter-host bytes / inter bandwidth. A partial sum's reduce-scatter moves at
 * least these bytes too (cost/link_model.h): (L − 1)/L ≥ (L − 1)/N inside the host, and its host's
 * reduced rows cross hosts once, (H − 1)/H = (N − L)/N of them.
 */
double exchange_ms_per_byte(const Task& task) { return exchange_per_byte(task).max(); }

/** The link model truncates bytes per peer (three terms per device): 3·N² bytes of total volume
 *  keep every floor below it. */
double truncation_slack_bytes(const Task& task) {
  const double n = task.topology.num_devices();
  return 3.0 * n * n;
}

/**
 * No exchange in which the devices together send `total_bytes` (each to the others 1/N of its
 * own) can leave every device shorter than this (see the header).
 */
double exchange_floor_ms(const Task& task, double total_bytes) {
  const Topology& topo = task.topology;
  const double n = topo.num_devices();
  if (n <= 1) return 0.0;
  return topo.a2a_latency_us / 1000.0 +
         std::max(0.0, total_bytes - truncation_slack_bytes(task)) * exchange_ms_per_byte(task);
}

/** The fewest bytes the input all-to-all moves in total: every table's lookups once. */
double input_floor_bytes(const Task& task, const InputCommOptions& input) {
  double bytes = 0.0;
  for (const TableSpec& t : task.workload.tables) {
    bytes += static_cast<double>(t.stats.num_indices) * input.index_bytes +
             static_cast<double>(task.workload.batch_size) * input.length_bytes;
  }
  return bytes;
}

}  // namespace

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

/** What the split bound needs of one table (see the header). */
struct SplitTable {
  double lookup_fw = 0.0, lookup_bw = 0.0;  ///< a_t: the lookup-proportional part, per pass
  double rest_fw = 0.0, rest_bw = 0.0;      ///< β_t: the rest of the table's floor
  double out_ms = 0.0;                      ///< α_t: step ms of its columns output once
  double out_intra_ms = 0.0;                ///< the intra-host part of α_t, paid per copy
  double out_inter_ms = 0.0;                ///< the inter-host part, paid at least once
  double in_ms = 0.0;                       ///< γ_t: step ms per copy of its lookups received
  double replicated_ms = kNever;            ///< δ_t: its gradient all-reduce if data-parallel
  /// false for a sequence table: its row pieces send their rows' lookups, not partial sums, so
  /// copies of its columns add no output (α_t is paid once however it is split)
  bool output_per_copy = true;
  /// false where the task or the table allows no layout that splits rows: every piece serves all
  /// the table's lookups ("Whole lookups" in analytic.h)
  bool row_pieces = true;
  /// w_min: the least width share some device holds of the table: its narrowest piece (4 columns
  /// or its min_partition; 1 without column splits), and at least 1 / N (N devices hold it all)
  double narrowest = 1.0;
  double in_bytes = 0.0;  ///< its lookups' bytes in the input all-to-all (lengths aside)
  PieceFloors pieces;     ///< its compute floor by the number of its pieces
};

/** The least width share of a piece of `t`: 4 columns or its min_partition; 1 without column
 *  splits (a grid's column blocks of every row are column splits too). */
double narrowest_share(const Task& task, const TableSpec& t) {
  const bool columns = t.allows(ShardingType::kColumnWise) || t.allows(ShardingType::kGridShard);
  if (!task.constraints.allow_column_split || !columns) return 1.0;
  return std::min(1.0, std::max(4.0, static_cast<double>(t.constraints.min_partition)) / t.dim);
}

/**
 * The fewest pieces of a table whose pieces all serve its lookups (no row splits) when each pass
 * leaves `room_f` / `room_w` beyond the call and one per-table cost; 0 where the device holding
 * its widest share w_min cannot fit it (analytic.h, "Whole lookups"). A piece of width share w_i
 * costs a + β·w_i there, so w_i ≤ (room − a) / β, and the shares sum to 1.
 */
double whole_lookup_pieces(const SplitTable& s, double room_f, double room_w) {
  const auto widest = [](double a, double rest, double room) {
    if (a > room * (1 + 1e-12)) return 0.0;
    return rest > 0 ? std::clamp((room - a) / rest, 0.0, 1.0) : 1.0;
  };
  const double w = std::min(widest(s.lookup_fw, s.rest_fw, room_f), widest(s.lookup_bw, s.rest_bw, room_w));
  if (w <= 0 || w < s.narrowest * (1 - 1e-12)) return 0.0;
  return std::ceil(1.0 / w - 1e-9);
}

/**
 * The least output and input cost α·X + γ·Y of a table whose pieces each fit a pass's room
 * (header): X ≥ k and X ≥ c + d·w, Y ≥ 1 / w for the pieces' area-weighted mean width share
 * w ∈ (0, 1], one line c + d·w per pass. Convex in w: the minimum is at w = 1, a crossing of two
 * lines, or a stationary point of one piece of the envelope.
 */
double cheapest_split(double alpha, double gamma, double k, const std::array<double, 2>& c,
                      const std::array<double, 2>& d) {
  const auto cost = [&](double w) { return alpha * std::max({k, c[0] + d[0] * w, c[1] + d[1] * w}) + gamma / w; };
  double best = cost(1.0);
  const auto consider = [&](double w) {
    if (w > 0.0 && w < 1.0) best = std::min(best, cost(w));
  };
  if (gamma <= 0.0) consider(1e-12);
  for (int i = 0; i < 2; ++i) {
    if (d[i] > 0) {
      consider((k - c[i]) / d[i]);
      if (alpha > 0) consider(std::sqrt(gamma / (alpha * d[i])));
    }
  }
  if (d[0] != d[1]) consider((c[1] - c[0]) / (d[0] - d[1]));
  return best;
}

/**
 * The values of a pass's max device time `m` at which the split bound is evaluated: `low`, every
 * breakpoint overhead + a_t / j ≥ low of the pieces a table needs (constant between them), and a
 * grid of 2% steps up to `top`, beyond which no table's rest forces a split. Empty if more than `cap`.
 */
std::vector<double> split_thresholds(const std::vector<double>& lookups, double overhead, double low, double top,
                                     std::size_t cap) {
  std::vector<double> points{low};
  for (double m = low * 1.02; m < top && points.size() <= cap; m *= 1.02) points.push_back(m);
  for (double a : lookups) {
    if (a <= 0) continue;
    const double jmax = std::floor(a / std::max(low - overhead, 1e-300));
    for (double j = std::max(1.0, jmax); j >= 1.0 && points.size() <= cap; j -= 1.0) {
      const double m = overhead + a / j;
      if (m >= low) points.push_back(m);
    }
  }
  if (points.size() > cap) return {};
  points.push_back(std::max(top, low));
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

}  // namespace

namespace {

/**
 * The averaging floor of the two output exchanges and the input exchange (header). Where some
 * table may be data-parallel (no exchange, its gradient all-reduced: δ_t per step), each table
 * pays the cheaper of its exchange bytes (α_t + γ_t, SplitTable) and δ_t, with the exchange
 * floors' latencies and slack kept (every floor is ≥ its latency and ≥ latency + (bytes − N²) ·
 * per byte, and the all-reduce's latency is left out).
 */
double exchange_floors_ms(const Task& task, const std::vector<SplitTable>& tables, const InputCommOptions& input,
                          bool replicable) {
  const bool exposed = input.mode == InputCommMode::kExposed;
  double output_width = 0.0;  // every table's columns output once (a sequence table's per lookup)
  for (const TableSpec& t : task.workload.tables) output_width += t.output_width(t.dim);
  const double output_bytes = static_cast<double>(task.workload.batch_size) * 4.0 * output_width;
  const double input_ms = exposed ? exchange_floor_ms(task, input_floor_bytes(task, input)) : 0.0;
  const double sharded = 2.0 * exchange_floor_ms(task, output_bytes) + input_ms;
  if (!replicable || task.topology.num_devices() <= 1) return sharded;
  const double latency = task.topology.a2a_latency_us / 1000.0;
  const double latencies = (2.0 + (exposed ? 1.0 : 0.0)) * latency;
  double cheapest =
      latencies - (2.0 + (exposed ? 1.0 : 0.0)) * truncation_slack_bytes(task) * exchange_ms_per_byte(task);
  for (const SplitTable& s : tables) cheapest += std::min(s.out_ms + s.in_ms, s.replicated_ms);
  return std::max(latencies, cheapest);
}

/**
 * The least forward + backward kernel time of the busiest device, given the least cost `pieces`
 * of one piece of each table that is never split by rows nor copied (analytic.h, "Whole
 * lookups"): each table lies on some device, so of the k·n + 1 costliest, some device holds k + 1.
 */
double busiest_of_pieces(std::vector<double> pieces, double n) {
  if (pieces.empty()) return 0.0;
  std::sort(pieces.begin(), pieces.end(), std::greater<>());
  double busiest = pieces.front();
  const auto devices = static_cast<std::size_t>(n);
  for (std::size_t k = 1; k * devices < pieces.size(); ++k) {
    double held = 0.0;  // the k + 1 cheapest of the k·n + 1 costliest
    for (std::size_t i = k * devices - k; i <= k * devices; ++i) held += pieces[i];
    busiest = std::max(busiest, held);
  }
  return busiest;
}

/**
 * Input caps (analytic.h): the least a step's input maximum I adds beyond the input floor
 * `input_floor_ms`, together with the per-table costs of the row pieces that I forces, over the
 * average device's compute. Device d's input lasts at least latency + m · ⌊bytes_d / N⌋ for what it
 * receives, bytes_d, with m the larger of (L − 1) / intra and (N − L) / inter per byte sent each
 * peer; so at I no device receives more than cap(I) = N · ((I − latency) / m + slack) bytes
 * (slack: a byte per peer for each exchange a plan may run, which the truncation can drop). A row
 * piece receives its rows' lookups and a length per sample, so a table's lookups need P ≥
 * in_bytes / (cap − B · length_bytes) pieces, whose least cost (PieceFloors) may exceed the floor's
 * by the per-table costs of the pieces beyond those the cache asks for; a table that cannot be split
 * by rows must fit one device: I is at least what that takes. The excess is piecewise linear in
 * I between the points where some table needs one piece fewer, so its least value is at one of them.
 */
double input_cap_excess(const Task& task, const InputCommOptions& input, const std::vector<SplitTable>& tables,
                        double input_floor_ms) {
  const Topology& topo = task.topology;
  const double n = topo.num_devices();
  const double per_host = std::max(topo.host_size(), 1);
  const auto per_peer = [](double peers, double gbps) { return gbps > 0 ? peers / (gbps * 1e6) : 0.0; };
  const double m = std::max(per_peer(per_host - 1, topo.intra_host_gbps),
                            topo.num_hosts() > 1 ? per_peer(n - per_host, topo.inter_host_gbps) : 0.0);
  if (!(m > 0)) return 0.0;
  constexpr double kSlackPerPeer = 8.0;  // the truncation drops under a byte per peer an exchange
  const double latency = topo.a2a_latency_us / 1000.0;
  const double lengths = static_cast<double>(task.workload.batch_size) * input.length_bytes;
  // The least I at which a device receives `bytes`.
  const auto input_for = [&](double bytes) { return latency + m * (bytes / n - kSlackPerPeer); };
  const auto cap = [&](double at) { return n * ((at - latency) / m + kSlackPerPeer); };
  const auto extra = [&](const SplitTable& s, double pieces) {
    const DeviceCompute forced = s.pieces.at_least(pieces), any = s.pieces.at_least(1.0);
    return std::max(0.0, forced.fw_ms + forced.bw_ms - any.fw_ms - any.bw_ms) / n;
  };
  // A table's pieces lie on at most N devices, each receiving at least a length per sample: I is
  // at least what its lookups over N devices take, and a table that may not split rows must fit one.
  double start = input_floor_ms;
  for (const SplitTable& s : tables)
    start = std::max(start, input_for((s.row_pieces ? s.in_bytes / n : s.in_bytes) + lengths));
  // The pieces each table needs at `start`, and the points above it where it needs one fewer.
  double excess = start - input_floor_ms;
  std::vector<std::pair<double, double>> fewer;  // (I, the change of the excess there)
  const double room = cap(start) - lengths;
  if (room <= 0) return excess;
  constexpr double kMostPoints = 1e6;  // beyond, only what `start` adds (a bound, a weaker one)
  double points = 0.0;
  for (const SplitTable& s : tables)
    if (s.row_pieces && s.in_bytes > room) points += std::min(n, std::ceil(s.in_bytes / room - 1e-12)) - 1.0;
  if (points > kMostPoints) return excess;
  for (const SplitTable& s : tables) {
    if (!s.row_pieces || s.in_bytes <= room) continue;
    const double pieces = std::min(n, std::ceil(s.in_bytes / room - 1e-12));
    excess += extra(s, pieces);
    for (double j = pieces - 1; j >= 1; j -= 1)
      fewer.emplace_back(input_for(s.in_bytes / j + lengths), extra(s, j) - extra(s, j + 1));
  }
  std::sort(fewer.begin(), fewer.end());
  double least = excess, forced = excess - (start - input_floor_ms);
  for (std::size_t i = 0; i < fewer.size();) {
    const double at = fewer[i].first;
    for (; i < fewer.size() && fewer[i].first == at; ++i) forced += fewer[i].second;
    least = std::min(least, at - input_floor_ms + forced);
  }
  return std::max(0.0, least);
}

/** What one computation of the bound covers (analytic.h). */
struct BoundScope {
  bool copies = true;           ///< plans with data-parallel tables too (false: a 2D plan's group)
  bool averaging_only = false;  ///< the averaging floor alone (the mean-speed floor)
  bool own_links = true;        ///< each device on its own links, not a mean's nor the slowest NIC's: input caps hold
};

/** Each table's floors under `hw`, in the task's order: what the passes of the bound over one task share. */
std::vector<TableFloors> all_table_floors(const Task& task, const SimHardware& hw) {
  std::vector<TableFloors> floors;
  floors.reserve(task.workload.tables.size());
  for (const TableSpec& t : task.workload.tables) floors.push_back(table_floors(hw, t, task.workload.batch_size));
  return floors;
}

/** The bound of the header over plans with data-parallel tables (`copies`) or without; `all_floors`
 *  are all_table_floors(task, hw). */
double bound_over(const Task& task, const SimHardware& hw, Objective objective, const InputCommOptions& input,
                  bool copies, double most_cell_tables, const BoundScope& scope,
                  std::span<const TableFloors> all_floors) {
  const double n = task.topology.num_devices();
  const std::int64_t batch = task.workload.batch_size;
  // A device with a shard pays the call once, and the busiest pays at least the average.
  double fw = 0.0, bw = 0.0;
  std::vector<SplitTable> tables;
  const PerByte rates = exchange_per_byte(task);
  const double per_byte = rates.max();
  const bool exposed = input.mode == InputCommMode::kExposed;
  bool replicable = false;  // some table may be data-parallel
  // Σ_t of the cheaper, for the average device, of the table sharded and copied: its compute share
  // and its exchange floors, or its copies' compute share and its gradient's all-reduce (header).
  double cheaper_of_two = 0.0;
  std::vector<double> whole_lookups;  // the least a piece of each table that is never split by rows costs
  const std::vector<bool> may_copy = copies ? replicable_tables(task) : std::vector<bool>(task.workload.tables.size());
  const double all_reduce_per_byte = copies ? all_reduce_ms_per_byte(task.topology) : 0.0;
  for (std::size_t i = 0; i < task.workload.tables.size(); ++i) {
    const TableSpec& t = task.workload.tables[i];
    // Pieces pay for the cache with per-table costs; a data-parallel table pays one per device,
    // and on every device its dense update in place of the sparse one.
    const TableFloors& floors = all_floors[i];
    const DeviceCompute& floor = floors.any;
    DeviceCompute total = floors.pieces.at_least(1.0);
    DeviceCompute copied_total{kNever, kNever};
    if (may_copy[i]) {
      const double row_bytes = static_cast<double>(t.dim) * bytes_per_element(t.dtype);
      const double sparse = 2.0 * row_bytes * static_cast<double>(t.stats.num_distinct);
      const double dense = kDenseUpdateTraffic * row_bytes * static_cast<double>(t.stats.num_rows);
      const auto copied = [&](double floor_ms, const SimCoefficients& c) {
        return floor_ms + (n - 1.0) * c[kSimTables] + c[kSimUpdateBytes] * (n * dense - sparse);
      };
      copied_total = {copied(floor.fw_ms, hw.fw), copied(floor.bw_ms, hw.bw)};
    }
    const DeviceCompute sharded_total = total;
    total.fw_ms = std::min(total.fw_ms, copied_total.fw_ms);
    total.bw_ms = std::min(total.bw_ms, copied_total.bw_ms);
    fw += total.fw_ms;
    bw += total.bw_ms;
    SplitTable s;
    const double lookups = static_cast<double>(t.stats.num_indices);
    s.lookup_fw = hw.fw[kSimLookups] * lookups;
    s.lookup_bw = hw.bw[kSimLookups] * lookups;
    s.rest_fw = std::max(0.0, floor.fw_ms - s.lookup_fw - hw.fw[kSimTables]);
    s.rest_bw = std::max(0.0, floor.bw_ms - s.lookup_bw - hw.bw[kSimTables]);
    const double out_bytes = 2.0 * static_cast<double>(batch) * 4.0 * t.output_width(t.dim);
    s.output_per_copy = t.pooled;
    s.out_ms = per_byte * out_bytes;
    s.out_intra_ms = rates.intra * out_bytes;
    s.out_inter_ms = rates.inter * out_bytes;
    s.in_ms =
        exposed ? per_byte * (lookups * input.index_bytes + static_cast<double>(batch) * input.length_bytes) : 0.0;
    s.row_pieces = may_split_rows(task, t);
    s.in_bytes = lookups * input.index_bytes;
    s.pieces = floors.pieces;
    s.narrowest = std::max(narrowest_share(task, t), 1.0 / n);
    if (may_copy[i]) {
      s.replicated_ms = all_reduce_per_byte * static_cast<double>(t.weight_bytes());
      replicable = true;
    } else if (!s.row_pieces) {
      whole_lookups.push_back(hw.fw[kSimTables] + hw.bw[kSimTables] + s.lookup_fw + s.lookup_bw +
                              (s.rest_fw + s.rest_bw) * s.narrowest);
    }
    cheaper_of_two += std::min((sharded_total.fw_ms + sharded_total.bw_ms) / n + s.out_ms + s.in_ms,
                               (copied_total.fw_ms + copied_total.bw_ms) / n + s.replicated_ms);
    tables.push_back(s);
  }
  const double fw_avg = hw.fw[kSimCalls] + fw / n;
  const double bw_avg = hw.bw[kSimCalls] + bw / n;
  const double comm = exchange_floors_ms(task, tables, input, replicable);
  double averaging = fw_avg + bw_avg + comm;
  if (replicable && n > 1) {
    // The averaging floor with each table's choice made once for its compute and its exchanges.
    const double slack = (2.0 + (exposed ? 1.0 : 0.0)) * (task.topology.a2a_latency_us / 1000.0 -
                                                          truncation_slack_bytes(task) * exchange_ms_per_byte(task));
    averaging = std::max(averaging, hw.fw[kSimCalls] + hw.bw[kSimCalls] + slack + cheaper_of_two);
  }
  if (scope.averaging_only) return averaging;
  if (objective == Objective::kStep && exposed && scope.own_links && !replicable && n > 1)
    averaging += input_cap_excess(task, input, tables, exchange_floor_ms(task, input_floor_bytes(task, input)));
  if (objective == Objective::kStep && n > 1)
    averaging = std::max(averaging,
                         hw.fw[kSimCalls] + hw.bw[kSimCalls] + busiest_of_pieces(std::move(whole_lookups), n) + comm);
  if (objective == Objective::kMaxSum || n <= 1) {
    // max_sum ≥ the average device's sum; each device pays its call only if it holds a shard.
    return objective == Objective::kMaxSum ? (hw.fw[kSimCalls] + hw.bw[kSimCalls]) / n + (fw + bw) / n + comm
                                           : averaging;
  }
  // Split bound (header): for every max forward F and max backward W a plan could have, the
  // copies of each table's columns and lookups its pieces need, at their cheapest.
  const double over_fw = hw.fw[kSimCalls] + hw.fw[kSimTables];
  const double over_bw = hw.bw[kSimCalls] + hw.bw[kSimTables];
  std::vector<double> a_fw, a_bw;
  double max_a_fw = 0.0, max_a_bw = 0.0;
  for (const SplitTable& s : tables) {
    a_fw.push_back(s.lookup_fw), a_bw.push_back(s.lookup_bw);
    max_a_fw = std::max(max_a_fw, s.lookup_fw), max_a_bw = std::max(max_a_bw, s.lookup_bw);
  }
  double max_whole_fw = 0.0, max_whole_bw = 0.0;  // beyond these no table needs splitting
  for (const SplitTable& s : tables) {
    max_whole_fw = std::max(max_whole_fw, s.lookup_fw + s.rest_fw);
    max_whole_bw = std::max(max_whole_bw, s.lookup_bw + s.rest_bw);
  }
  const double f_low = std::max(fw_avg, over_fw + max_a_fw / n);
  const double w_low = std::max(bw_avg, over_bw + max_a_bw / n);
  constexpr std::size_t kCap = 4096;
  std::vector<double> fs = split_thresholds(a_fw, over_fw, f_low, over_fw + max_whole_fw, kCap);
  std::vector<double> ws = split_thresholds(a_bw, over_bw, w_low, over_bw + max_whole_bw, kCap);
  if (fs.empty() || ws.empty()) return averaging;  // too many points to enumerate
  // The link model counts whole bytes per peer: slack per exchange (truncation_slack_bytes).
  const double latencies =
      (2.0 + (exposed ? 1.0 : 0.0)) * (task.topology.a2a_latency_us / 1000.0 - truncation_slack_bytes(task) * per_byte);
  // On [fs[i], fs[i+1]) × [ws[j], ws[j+1]) the pieces needed for lookups are those at the lower
  // ends (constant there), and those for the rest at least those at the upper ends.
  const auto rest_room = [](const std::vector<double>& points, std::size_t i, double overhead) {
    return i + 1 < points.size() ? points[i + 1] - overhead : std::numeric_limits<double>::infinity();
  };
  // max(F, F_avg(Y)) + max(W, W_avg(Y)) ≥ λ (F + W) + (1 − λ)(F_avg(Y) + W_avg(Y)) for λ in
  // [0, 1], where the averages grow by (Y_t − 1)(a_fw + a_bw) / N with each table's lookup copies Y_t.
  double duplicated = 0.0;
  for (const SplitTable& s : tables) duplicated += (s.lookup_fw + s.lookup_bw) / n;
  // The output's intra-host bytes grow with every copy of a table's columns, its inter-host bytes
  // do not (a host's partial sums cross hosts reduced, cost/link_model.h): the output is at least
  // the larger of Σ_t (intra part · X_t) and Σ_t (inter part), each taken at its own cheapest, and
  // both sums carry the same input and compute terms (the input all-to-all, a separate exchange).
  // A table whose whole cost fits below both lowest maxima needs one copy in every cell: its
  // output and input cost is a constant; only the others are enumerated.
  std::vector<SplitTable> active;
  double inactive_intra = 0.0, inactive_inter = 0.0, inactive_lookups = 0.0;
  for (const SplitTable& s : tables) {
    if (s.lookup_fw + s.rest_fw > f_low - over_fw || s.lookup_bw + s.rest_bw > w_low - over_bw) {
      active.push_back(s);
    } else {
      inactive_intra += std::min(s.out_intra_ms + s.in_ms, s.replicated_ms);
      inactive_inter += std::min(s.out_inter_ms + s.in_ms, s.replicated_ms);
      inactive_lookups += (s.lookup_fw + s.lookup_bw) / n;
    }
  }
  // At scale the cells × tables to enumerate are capped: every other point of the longer list is
  // dropped until they fit. A cell then takes the pieces its tables need for lookups at its upper
  // end — no more than anywhere inside it —, so the minimum is still a bound, only a weaker one.
  const double kMostCellTables = most_cell_tables;
  const auto work = [&] {
    return static_cast<double>(fs.size()) * static_cast<double>(ws.size()) * static_cast<double>(active.size() + 1);
  };
  const bool thinned = work() > kMostCellTables;
  while (work() > kMostCellTables && (fs.size() > 2 || ws.size() > 2)) {
    std::vector<double>& longer = fs.size() >= ws.size() ? fs : ws;
    std::vector<double> kept;
    for (std::size_t i = 0; i < longer.size(); i += 2) kept.push_back(longer[i]);
    if (kept.back() != longer.back()) kept.push_back(longer.back());
    longer = std::move(kept);
  }
  // Where every breakpoint is kept, the pieces needed for lookups are constant on a cell: its lower end's.
  const auto lookup_room = [&](const std::vector<double>& points, std::size_t i, double overhead) {
    return thinned ? rest_room(points, i, overhead) : points[i] - overhead;
  };
  double bound = averaging;
  for (const double lambda : {1.0, 0.5, 0.0}) {
    double best = std::numeric_limits<double>::infinity();
    const double constant =
        (1.0 - lambda) * (fw_avg + bw_avg - duplicated) + latencies + (1.0 - lambda) * inactive_lookups;
    // The bound takes this λ's least cell only where it lies above the bound so far: the first cell
    // at or below it ends the λ (no cell can then raise the bound).
    for (std::size_t i = 0; i < fs.size() && best > bound; ++i) {
      const double room_f = lookup_room(fs, i, over_fw), rest_f = rest_room(fs, i, over_fw);
      for (std::size_t j = 0; j < ws.size() && best > bound; ++j) {
        const double room_w = lookup_room(ws, j, over_bw), rest_w = rest_room(ws, j, over_bw);
        const double base = lambda * (fs[i] + ws[j]) + constant;
        double intra = inactive_intra, inter = inactive_inter;
        for (const SplitTable& s : active) {
          const double k = std::max({1.0, s.lookup_fw > 0 ? std::ceil(s.lookup_fw / room_f - 1e-12) : 1.0,
                                     s.lookup_bw > 0 ? std::ceil(s.lookup_bw / room_w - 1e-12) : 1.0});
          const std::array<double, 2> c{s.lookup_fw / rest_f, s.lookup_bw / rest_w};
          const std::array<double, 2> d{s.rest_fw / rest_f, s.rest_bw / rest_w};
          const double copy_ms = s.in_ms + (1.0 - lambda) * (s.lookup_fw + s.lookup_bw) / n;
          // Data-parallel: no copies of its columns or lookups, its lookups counted once.
          const double replicated = s.replicated_ms + (1.0 - lambda) * (s.lookup_fw + s.lookup_bw) / n;
          double split = 0.0, crossing = s.out_inter_ms + copy_ms;
          if (s.row_pieces) {
            split = s.output_per_copy ? cheapest_split(s.out_intra_ms, copy_ms, k, c, d)
                                      : s.out_intra_ms + cheapest_split(0.0, copy_ms, k, c, d);
          } else {  // each piece serves every lookup and outputs its own columns once
            const double pieces = whole_lookup_pieces(s, rest_f, rest_w);
            split = pieces > 0 ? s.out_intra_ms + copy_ms * pieces : kNever;
            crossing = pieces > 0 ? s.out_inter_ms + copy_ms * pieces : kNever;
          }
          intra += std::min(split, replicated);
          if (s.out_inter_ms > 0) inter += std::min(crossing, replicated);
          if (base + std::max(intra, inter) >= best) break;
        }
        best = std::min(best, base + std::max(intra, inter));
      }
    }
    if (std::isfinite(best)) bound = std::max(bound, best);
  }
  return bound;
}

}  // namespace

namespace {

/** sim_lower_bound over the 1D plans of `task` (analytic.h); with `scope.copies` false, over those
 *  without a data-parallel table (a 2D plan's group). */
double one_layout_bound(const Task& task, const SimHardware& hw, Objective objective, const InputCommOptions& input,
                        double most_cell_tables, const BoundScope& scope = {}) {
  const std::vector<TableFloors> floors = all_table_floors(task, hw);
  const double without = bound_over(task, hw, objective, input, false, most_cell_tables, scope, floors);
  if (!scope.copies) return without;
  const std::vector<bool> may_copy = replicable_tables(task);
  const bool replicable = std::find(may_copy.begin(), may_copy.end(), true) != may_copy.end();
  if (!replicable) return without;
  // A plan with a data-parallel table also pays the all-reduce's latency on every device.
  return std::min(without, bound_over(task, hw, objective, input, true, most_cell_tables, scope, floors) +
                               task.topology.a2a_latency_us / 1000.0);
}

}  // namespace

namespace {

/** Whether the devices differ in speed (mixed hardware: the sim model's `on_device` factors). */
bool mixed_speeds(const Topology& topology) {
  return std::any_of(topology.devices.begin(), topology.devices.end(), [&](const Device& d) {
    return d.hbm_gbps != topology.devices.front().hbm_gbps || d.uvm_gbps != topology.devices.front().uvm_gbps;
  });
}

}  // namespace

namespace {

/** The smaller of `one_d` (the 1D plans' bound) and, for every 2D layout the task allows, its
 *  group task's 1D bound plus the replica sync floor (analytic.h, "2D plans"), the sync on the
 *  links of `links` (the task as it is, where `task` is one with faster devices or links). */
double with_2d_layouts(const Task& task, const SimHardware& hw, Objective objective, const InputCommOptions& input,
                       double most_cell_tables, double one_d, const Task& links) {
  double bound = one_d;
  const std::vector<ShardingGroups> layouts = sharding_group_layouts(task);
  const auto bytes = static_cast<double>(links.workload.total_bytes());
  for (const ShardingGroups& groups : layouts) {
    // step and max_sum both pay at least the busiest rank's sync on top of (or besides) the group's plan.
    const double sync = replica_sync_floor_ms(links, groups, bytes);
    if (sync >= bound) continue;
    const double group =
        one_layout_bound(sharding_group_task(task, groups), hw, objective, input,
                         std::max(1.0, most_cell_tables / static_cast<double>(layouts.size())), {.copies = false});
    bound = std::min(bound, objective == Objective::kStep ? group + sync : std::max(group, sync));
  }
  return bound;
}

/** `task` with every device's links at `intra` / `inter` GB/s (the topology's; none its own). */
Task with_links(Task task, double intra, double inter) {
  task.topology.intra_host_gbps = intra, task.topology.inter_host_gbps = inter;
  for (Device& d : task.topology.devices) d.intra_host_gbps = d.inter_host_gbps = 0.0;
  return task;
}

/** `task` with every device's links the fastest any host has (the link model charges each device
 *  its own: a plan's exchanges take no longer there). */
Task with_fastest_links(Task task) {
  const Topology& topology = task.topology;
  double intra = 0.0, inter = 0.0;
  for (int d = 0; d < topology.num_devices(); ++d)
    intra = std::max(intra, topology.intra_gbps(d)), inter = std::max(inter, topology.inter_gbps(d));
  return with_links(std::move(task), intra, inter);
}

/**
 * `task` with every device's links at the devices' mean bandwidth, for the averaging floor: where
 * device d moves x_d bytes over a link of r_d GB/s, the slowest takes at least Σ x_d / Σ r_d, the
 * floor of the same bytes over N links of the mean rate. The all-reduce, at the slowest links in
 * the plan's task, is at the mean here: no dearer.
 */
Task with_mean_links(Task task) {
  const Topology& topology = task.topology;
  if (topology.uniform_links()) return task;  // as it is: a mean could round below the one rate
  double intra = 0.0, inter = 0.0;
  for (int d = 0; d < topology.num_devices(); ++d) intra += topology.intra_gbps(d), inter += topology.inter_gbps(d);
  const double n = topology.num_devices();
  return with_links(std::move(task), intra / n, inter / n);
}

/**
 * Whether every NIC may be taken as slow as the slowest (analytic.h, "Mixed speeds"): for the step
 * on full-duplex links of several hosts. Device d of host h (L devices of N) sends its host's
 * share f of an exchange's T bytes for the other hosts' samples, (N − L) / (N · L) · f · T on the
 * host's mean, and receives the other hosts' share for its own samples, (1 − f) · T / N. The larger
 * of the two is at least their mix with weights L / N and (N − L) / N, (N − L) / N² · T whatever
 * f: the averaging floor's inter-host bytes per device, through this host's own NIC. Each of the
 * step's exchanges lasts as long as its slowest device, so each is at least that floor at the
 * slowest NIC. Not for max_sum (the slow host's devices may hold no compute) nor half-duplex links
 * (there the mix is not the minimum over f).
 */
bool slowest_nic_floor_holds(const Topology& topology, Objective objective) {
  return objective == Objective::kStep && !topology.half_duplex && topology.num_hosts() > 1;
}

/** `task` with every NIC at `topology`'s slowest (its other links as they are). */
Task with_slowest_nic(Task task, const Topology& topology) {
  task.topology.inter_host_gbps = topology.slowest_inter_gbps();
  return task;
}

/** `hw` for a device whose kernel terms but the calls take `kernels` times device 0's, and its
 *  UVM term `uvm` times (the factors `on_device` applies to features, here to coefficients). */
SimHardware at_speed(SimHardware hw, double kernels, double uvm) {
  for (int i = kSimTables; i < kSimUvmBytes; ++i) hw.fw[i] *= kernels, hw.bw[i] *= kernels;
  hw.fw[kSimUvmBytes] *= uvm, hw.bw[kSimUvmBytes] *= uvm;
  return hw;
}

/**
 * Mixed speeds (analytic.h): the step's averaging floor of the 1D plans with device 0's
 * coefficients scaled to the devices' mean speed. Device d's kernel time is the calls plus r_d ×
 * the rest of its work in device 0's terms (r_d: device 0's HBM bandwidth over d's). The busiest
 * device's is at least the calls plus the work over Σ_d 1 / r_d: every term but the calls scaled
 * by n / Σ_d 1 / r_d. (The floors count every row in HBM, so the UVM term is not in them.) Not for
 * max_sum: a device's sum adds its exchanges, whose average no speed weighs.
 */
double mean_speed_averaging(const Task& task, const SimHardware& hw, Objective objective, const InputCommOptions& input,
                            double most_cell_tables) {
  if (objective != Objective::kStep) return 0.0;
  double speeds = 0.0;
  for (const Device& d : task.topology.devices) speeds += d.hbm_gbps / task.topology.devices.front().hbm_gbps;
  const double scale = static_cast<double>(task.topology.num_devices()) / speeds;
  if (!std::isfinite(scale) || scale <= 0.0) return 0.0;
  return one_layout_bound(task, at_speed(hw, scale, 1.0), objective, input, most_cell_tables, {.averaging_only = true});
}

}  // namespace

double sim_lower_bound(const Task& task, const SimHardware& hw, Objective objective, const InputCommOptions& input,
                       double most_cell_tables) {
  if (objective == Objective::kBalance) return 1.0;
  if (!mixed_speeds(task.topology) && task.topology.uniform_links())
    return with_2d_layouts(task, hw, objective, input, most_cell_tables,
                           one_layout_bound(task, hw, objective, input, most_cell_tables), task);
  // Every device no slower than the fastest, and its links no slower than the fastest host's: a
  // plan costs no more there, so its bound holds here.
  Task fastest = with_fastest_links(task);
  Device top = task.topology.devices.front();
  for (const Device& d : task.topology.devices)
    top.hbm_gbps = std::max(top.hbm_gbps, d.hbm_gbps), top.uvm_gbps = std::max(top.uvm_gbps, d.uvm_gbps);
  const SimHardware quick = at_speed(hw, task.topology.devices.front().hbm_gbps / top.hbm_gbps,
                                     top.uvm_gbps > 0 ? uvm_reference_gbps(task.topology) / top.uvm_gbps : 1.0);
  for (Device& d : fastest.topology.devices) d.hbm_gbps = top.hbm_gbps, d.uvm_gbps = top.uvm_gbps;
  double one_d = one_layout_bound(fastest, quick, objective, input, most_cell_tables);
  Task mean = with_mean_links(task);
  if (slowest_nic_floor_holds(task.topology, objective) &&
      task.topology.slowest_inter_gbps() < fastest.topology.inter_host_gbps) {
    one_d = std::max(one_d, one_layout_bound(with_slowest_nic(fastest, task.topology), quick, objective, input,
                                             most_cell_tables, {.own_links = false}));
    mean = with_slowest_nic(std::move(mean), task.topology);
  }
  one_d = std::max(one_d, mean_speed_averaging(mean, hw, objective, input, most_cell_tables));
  return with_2d_layouts(fastest, quick, objective, input, most_cell_tables, one_d, task);
}

namespace {

/** The 2080 Ti's coefficients fitted to the papers; other GPUs' scaled by HBM bandwidth (UVM aside). */
SimHardware scaled_from_2080ti(const Topology& topology) {
  const Device& device = topology.devices.front();
  const bool is_2080ti = topology.device_kind.find("2080") != std::string::npos;
  // Other GPUs: every term but UVM scales with device-memory bandwidth from the 2080 Ti's.
  const double ratio = is_2080ti ? 1.0 : k2080TiHbmGbps / device.hbm_gbps;
  SimHardware hw;
  hw.name = is_2080ti ? "2080 Ti fitted to the papers' measurements (docs/judge.md)"
                      : topology.device_kind + " derived from the papers-fitted 2080 Ti by HBM bandwidth " +
                            std::to_string(static_cast<int>(k2080TiHbmGbps)) + " / " +
                            std::to_string(static_cast<int>(device.hbm_gbps)) + " GB/s (not measured)";
  hw.calibrated = is_2080ti;
  for (int i = 0; i + 1 < kNumSimFeatures; ++i) {
    hw.fw[i] = k2080TiForward[i] * ratio;
    hw.bw[i] = k2080TiBackward[i] * ratio;
  }
  return hw;
}

/** The H200's coefficients, measured on this project's cuda backend (kH200Forward's comment). */
SimHardware measured_h200() {
  SimHardware hw;
  hw.name = "H200 calibrated on this project's cuda backend (docs/benchmarks.md)";
  hw.calibrated = true;
  hw.calibrated_on = HardwareFingerprint{"NVIDIA H200", "Intel(R) Xeon(R) Processor", 16, 16, 314572800, 135148564480};
  hw.fw = kH200Forward;
  hw.bw = kH200Backward;
  return hw;
}

}  // namespace

SimHardware sim_calibrated_gpu(const Topology& topology) {
  const SimHardware roofline = sim_roofline(topology);
  const bool measured = topology.device_kind.find("H200") != std::string::npos;
  SimHardware hw = measured ? measured_h200() : scaled_from_2080ti(topology);
  hw.cache_bytes = roofline.cache_bytes;
  hw.fw[kSimUvmBytes] = roofline.fw[kSimUvmBytes];  // the device's own host link (no sample had a UVM tier)
  hw.bw[kSimUvmBytes] = roofline.bw[kSimUvmBytes];
  return hw;
}

SimHardware sim_hardware_for(const Topology& topology) {
  EMBSHARD_CHECK(!topology.devices.empty(), "sim: the topology has no devices");
  if (topology.device_kind != "cpu") return sim_calibrated_gpu(topology);
  SimHardware hw;
  hw.name = "cpu calibrated on this project's cpu backend on an Intel(R) Xeon(R) Processor (480 MiB L3)";
  hw.calibrated = true;
  hw.calibrated_on = HardwareFingerprint{"cpu", "Intel(R) Xeon(R) Processor", 2, 2, kCpuCacheBytes, 25276502016};
  hw.cache_bytes = kCpuCacheBytes;
  hw.fw = kCpuForward;
  hw.bw = kCpuBackward;
  return hw;
}

std::unique_ptr<ComputeModel> make_sim_model(SimHardware hardware) {
  return std::make_unique<SimModel>(std::move(hardware));
}

namespace {

constexpr const char* kSimFileFormat = "embshard-sim-coefficients";
constexpr int kSimFileVersion = 1;

nlohmann::json coefficients_json(const SimCoefficients& c) {
  nlohmann::json j;
  for (int i = 0; i < kNumSimFeatures; ++i) j[sim_feature_names()[i]] = c[i];
  return j;
}

SimCoefficients read_coefficients(const detail::JsonNode& node) {
  node.expect_object();
  node.only_keys(
      {"calls", "tables", "lookups", "miss_bytes", "hit_bytes", "output_bytes", "update_bytes", "uvm_bytes"});
  SimCoefficients c{};
  for (int i = 0; i < kNumSimFeatures; ++i) c[i] = node.at(sim_feature_names()[i]).as_double(0.0);
  return c;
}

}  // namespace

std::string sim_hardware_json(const SimHardware& hw, const std::string& device_kind) {
  nlohmann::json doc;
  doc["format"] = kSimFileFormat;
  doc["version"] = kSimFileVersion;
  doc["hardware"] = hw.name;
  doc["device_kind"] = device_kind;
  doc["cache_bytes"] = hw.cache_bytes;
  doc["fw_coefficients_ms"] = coefficients_json(hw.fw);
  doc["bw_coefficients_ms"] = coefficients_json(hw.bw);
  if (hw.calibrated_on) doc["fingerprint"] = detail::fingerprint_json(*hw.calibrated_on);
  return doc.dump(2) + "\n";
}

std::pair<SimHardware, std::string> read_sim_hardware_file(const std::string& path) {
  const nlohmann::json document = detail::parse_json(read_file(path), path);
  const detail::JsonNode root(document, path);
  root.expect_object();
  if (!root.has("format") || root.at("format").as_string() != kSimFileFormat) {
    root.fail(detail::concat("not a sim coefficients file (field 'format' must be '", kSimFileFormat,
                             "'; `embshard profile calibrate --samples S --out C.json` writes one)"));
  }
  if (root.at("version").as_int() != kSimFileVersion) {
    root.at("version").fail(detail::concat("version ", root.at("version").as_int(),
                                           " is not supported (this build reads ", kSimFileVersion, ")"));
  }
  SimHardware hw;
  hw.name = root.at("hardware").as_string();
  hw.calibrated = true;
  hw.cache_bytes = root.at("cache_bytes").as_int(0);
  hw.fw = read_coefficients(root.at("fw_coefficients_ms"));
  hw.bw = read_coefficients(root.at("bw_coefficients_ms"));
  if (root.has("fingerprint")) hw.calibrated_on = detail::read_fingerprint(root.at("fingerprint"));
  return {hw, root.at("device_kind").as_string()};
}

SimCoefficients fit_sim_coefficients(std::span<const SimFeatures> features, std::span<const double> measured_ms) {
  EMBSHARD_CHECK(features.size() == measured_ms.size() && !features.empty(),
                 "sim fit: needs as many measurements as feature rows, and at least one");
  std::vector<std::vector<double>> rows;
  for (const SimFeatures& f : features) rows.emplace_back(f.begin(), f.end());
  const std::vector<double> x = relative_nnls(rows, measured_ms);
  SimCoefficients c{};
  std::copy(x.begin(), x.end(), c.begin());
  return c;
}

}  // namespace embshard
