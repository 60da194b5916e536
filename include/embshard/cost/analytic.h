#pragma once
/**
 * @file analytic.h
 * @brief The `sim` backend: a deterministic analytic model of a device's fused embedding-bag
 *        cost, linear in a few physically meaningful features of its shard.
 *
 * Features of a shard (one fused call over its tables, batch B), from each table's statistics at
 * batch B (lookups L_t, distinct rows U_t; a row range keeps the share rows/num_rows of both) and
 * row bytes r_t = cols × bytes per element:
 *
 *   calls          1 if the shard has a table, else 0          (launch, thread team)
 *   tables         number of fused tables                      (per-table set-up)
 *   lookups        Σ L_t                                       (index reads, loop, sorting)
 *   miss_bytes     Σ h_t · r_t · (U_t + (L_t − U_t) · evict_t)   (rows fetched from HBM)
 *   hit_bytes      Σ h_t · r_t · (L_t − U_t) · (1 − evict_t)   (re-reads served by the cache)
 *   output_bytes   B · Σ cols · o_t · 4                        (the output / its gradient)
 *   update_bytes   Σ 2 · r_t · U_t                             (backward: read + write each row once)
 *   uvm_bytes      Σ (1 − h_t) · r_t · L_t                     (every cold lookup crosses the host link)
 *
 * where o_t is 1 for a pooled table and, for a sequence table (TableSpec::pooled false: every
 * lookup an output row), the lookups per sample its rows serve, pooling_factor · rows/num_rows.
 *
 * Two memory tiers: h_t = `sim_hbm_access_share(stats, shard_rows, hbm_rows)`, the share of the
 * shard's lookups that its first hbm_rows rows serve (`Shard::hbm_rows` counts rows of the shard,
 * which RecShard's remapping makes its hottest). A row range is modelled as a uniform sample of
 * the table's rows (hashed ids: a row's number says nothing of its heat), so the hottest k of a
 * shard holding the share s of the rows serve what the table's hottest k / s rows serve: from the
 * ICDF, linear between its steps, 1 when hbm_rows is -1, covers the whole shard or every row the
 * ICDF counts (without an ICDF: (k / s) / num_rows). The HBM byte terms carry the share h_t, the
 * UVM bytes the rest, costed at the topology's uvm_gbps (1 / uvm_gbps per byte, forward and
 * backward).
 *
 * A copy of a data-parallel table (plan/plan.h) on one of N devices serves b = 1/N of the batch:
 * L_t becomes b · L_t, U_t the distinct rows of a random b of the bags, U_t · (1 − (1 − b)^(L_t/U_t))
 * (each distinct row, looked up L_t/U_t times on average, is missed by all of them with
 * probability (1 − b)^(L_t/U_t)), output_bytes b · B · cols · o_t · 4, and its backward is dense: the
 * whole table's gradient and optimizer update, update_bytes = 9.22 · rows · r_t (the traffic of
 * TorchRec's estimator for a data-parallel table's optimizer, table bytes × 9.22). Copies run as
 * their device's second fused call: `calls` counts 1 for the device's shards and 1 for its copies.
 *
 * with evict_t = clamp(1 − cache_bytes / (r_t · U_t), 0, 1), the share of re-reads that miss
 * because the table's working set outgrows the last-level cache (the fused kernels walk the
 * batch table by table, so each table has the cache to itself). Then
 *
 *   pass_ms = Σ_f coefficient_f · feature_f   (coefficients in ms or ns per unit, see below)
 *
 * separately for the forward and the backward pass. These effects follow from the form (and are
 * tested on every built-in coefficient set): fusing tables costs less than the sum of singles
 * (one call overhead instead of many); a column half costs more than half (lookups and tables do
 * not halve); cost rises with pooling and dim and falls with skew (fewer distinct rows → fewer
 * miss bytes).
 *
 * Coefficients: the `cpu` preset's are fitted (non-negative least squares on relative error) to
 * measured samples of this project's `cpu` backend (`embshard profile calibrate --samples`,
 * docs/benchmarks.md reports the fit and its error). The `2080ti` preset's are fitted to the
 * seeds' published 2080 Ti measurements (`profile calibrate --figures`, eval/paper_calibration.h;
 * docs/judge.md: every figure, fitted or held out, published against judged); v100 / a100 / h100
 * scale the 2080 Ti's by the data sheets' HBM bandwidth ratio until a lent GPU measures them, and
 * reports say so (`SimHardware::name`). `sim_roofline` keeps the data-sheet roofline the fit
 * starts from.
 */
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "embshard/core/fingerprint.h"
#include "embshard/cost/breakdown.h"
#include "embshard/cost/compute_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/table.h"

namespace embshard {

/** Where each feature sits in SimFeatures and SimCoefficients (sim_feature_names() in this order). */
enum SimFeature : int {
  kSimCalls,
  kSimTables,
  kSimLookups,
  kSimMissBytes,
  kSimHitBytes,
  kSimOutputBytes,
  kSimUpdateBytes,
  kSimUvmBytes
};
inline constexpr int kNumSimFeatures = kSimUvmBytes + 1;
/** Feature names in order: calls, tables, lookups, miss_bytes, hit_bytes, output_bytes, update_bytes, uvm_bytes. */
[[nodiscard]] const std::array<const char*, kNumSimFeatures>& sim_feature_names();

using SimFeatures = std::array<double, kNumSimFeatures>;
/** Per-feature costs in ms per unit (so pass_ms is a dot product). */
using SimCoefficients = std::array<double, kNumSimFeatures>;

struct SimHardware {
  std::string name;         ///< "cpu (calibrated ...)" or "a100 roofline"
  bool calibrated = false;  ///< fitted to measurements (true) or from data sheets (false)
  std::int64_t cache_bytes = 0;
  SimCoefficients fw{};
  SimCoefficients bw{};
  /// The machine the coefficients were measured on, where they describe one machine (cpu).
  std::optional<HardwareFingerprint> calibrated_on;
};

/**
 * A sim preset file: what `embshard profile calibrate --samples S --out C.json` writes and
 * `sim:coefficients=C.json` loads — {"format": "embshard-sim-coefficients", "version": 1,
 * "hardware", "device_kind", "cache_bytes", "fw_coefficients_ms", "bw_coefficients_ms" (one
 * non-negative number per feature name), "fingerprint"} plus any fit report fields.
 */
[[nodiscard]] std::string sim_hardware_json(const SimHardware& hardware, const std::string& device_kind);
/** Reads a preset file strictly; errors name the file and the field. Returns the device kind too. */
[[nodiscard]] std::pair<SimHardware, std::string> read_sim_hardware_file(const std::string& path);

/** One table of a shard as the model sees it. */
struct SimTable {
  TableStats stats;  ///< at the batch being modelled
  int cols = 0;
  int bytes_per_element = 4;
  double row_share = 1.0;      ///< rows of the shard / rows of the table
  std::int64_t hbm_rows = -1;  ///< rows of the shard in HBM (its hottest); -1: all
  int replicas = 0;            ///< a copy of a data-parallel table among this many (file comment)
  bool pooled = true;          ///< false: a sequence table, one output row per lookup (file comment)
};

[[nodiscard]] SimFeatures sim_features(std::span<const SimTable> tables, std::int64_t batch_size,
                                       std::int64_t cache_bytes);
/** The features of one device holding `shards` of `task` (at the task's batch). */
[[nodiscard]] SimFeatures sim_device_features(const Task& task, std::span<const PlacedShard> shards,
                                              std::int64_t cache_bytes);
[[nodiscard]] double sim_pass_ms(const SimCoefficients& coefficients, const SimFeatures& features);
/**
 * What `shards` cost beyond the same shards of pooled tables, forward and backward: a sequence
 * table's shard writes (and takes the gradient of) one output row per lookup it serves, o_t of the
 * file comment, where a pooled one writes one per sample; the difference in output_bytes at
 * `hardware`'s coefficients (negative where a row piece serves fewer lookups than samples).
 * {0, 0} when every shard is pooled. For compute models trained on pooled kernels only
 * (cost/neural_cost.h).
 */
[[nodiscard]] DeviceCompute sim_sequence_output_ms(const SimHardware& hardware, const Task& task,
                                                   std::span<const PlacedShard> shards);
/**
 * h_t of the file comment: the share of a shard's lookups served by its `hbm_rows` hottest rows,
 * for a shard of `shard_rows` rows of the table `stats` describes (-1 or ≥ shard_rows: 1).
 */
[[nodiscard]] double sim_hbm_access_share(const TableStats& stats, std::int64_t shard_rows, std::int64_t hbm_rows);

/** A GPU topology's data-sheet roofline: its HBM and UVM bandwidth and L2 size, uncalibrated. */
[[nodiscard]] SimHardware sim_roofline(const Topology& topology);

/**
 * A GPU topology's judge: the H200's coefficients measured on this project's cuda backend; for
 * other GPUs the 2080 Ti's fitted to the papers' measurements, scaled by the ratio of HBM
 * bandwidths (UVM: the device's own host link; L2: its data sheet). The H200's and the 2080 Ti's
 * are `calibrated`.
 */
[[nodiscard]] SimHardware sim_calibrated_gpu(const Topology& topology);

/** The model's hardware for a topology: `cpu` calibrated on this project's VM, GPUs as above. */
[[nodiscard]] SimHardware sim_hardware_for(const Topology& topology);

/** The `sim` compute model of `hardware`. Uses the task's batch size and its tables' statistics. */
[[nodiscard]] std::unique_ptr<ComputeModel> make_sim_model(SimHardware hardware);

/**
 * A value of `objective` no valid plan of `task` can beat under this hardware model and the link
 * model (for `balance`, an upper bound: 1); every plan's certificate.
 *
 * Averaging floors. Per table, the cost of the whole table with the cache term at whichever
 * extreme is cheaper and no call overhead is at most the summed cost of any split of it (splits
 * add lookups and tables and keep bytes; all coefficients are ≥ 0; UVM rows cost at least their
 * HBM bytes); the busiest device pays its call, so max_d fw_comp_d ≥ call + Σ_t fw_t / N, likewise
 * bw. Pieces and the cache: a piece of area share a evicts the share max(0, 1 − cache / (a · W))
 * of its re-reads (W the table's working set), so its evicted re-read bytes are convex in a and
 * k pieces evict no less than k equal ones, the share max(0, 1 − k · cache / W) of the re-reads;
 * each piece beyond the first pays the per-table cost. That least cost of k pieces is linear in k
 * up to W / cache, where none evicts, and grows by the per-table cost beyond: convex, so over whole
 * numbers of pieces it is least at 1, ⌊W / cache⌋ or ⌈W / cache⌉, and the least of the three is
 * the table's floor (until stop 63 the bound left out ⌊W / cache⌋, and plans of tables a little
 * over twice or three times the cache beat it by up to 5%; analytic.cpp `PieceFloors`). Where
 * re-reads cost more as hits than as misses (coefficients are only fitted ≥ 0), one piece of
 * nearly all the table evicts the most: k pieces cost at least the whole table under the cache
 * plus k − 1 per-table costs. A
 * data-parallel table costs at least the first floor plus N − 1 per-table costs and N dense
 * updates in place of one sparse one (its N copies); the bound over plans with copies takes the
 * smaller of the two for each table that may be copied. Every column is output at least once, so
 * some device sends at least (N−1)/N² · B · 4 · Σ dims bytes, over at most the sum of its link
 * bandwidths, plus latency. Every table's lookups and lengths reach some device at least once, so
 * when the input all-to-all is exposed some device receives at least (N−1)/N² · Σ_t (L_t ·
 * index_bytes + B · length_bytes) (overlap, omit: 0). On half-duplex links (data/topology.h) each
 * exchange floor's bytes count twice: what the devices send they also receive, and a link carries
 * both. max_sum ≥ its device average; step ≥ input + fw + 2 · comm + bw.
 *
 * Split bound (step). Write a table's floor as τ + a + β per pass: τ the per-table coefficient, a
 * the lookup term (∝ the lookups a piece serves, i.e. its row share s), β the rest (∝ at least
 * the piece's area share A = s · cols / C). Take any plan, with max forward F and max backward W;
 * a piece of table t on a device costs at most F − call − τ forward (W likewise), so:
 *   - the pieces covering one column partition the rows, each s ≤ (F − call − τ) / a: at least
 *     k = ⌈a / (F − call − τ)⌉ of them, so the table's columns are output X ≥ k times in all;
 *   - with w the pieces' area-weighted mean width share, X ≥ (a + β · w) / (F − call − τ) and
 *     the table's lookups are received Y ≥ 1 / w times (Jensen), w ∈ (0, 1];
 *   - its output then costs α · X and its input γ · Y (α, γ: the averaging floor's per-byte times).
 * So step ≥ F + W + latencies + Σ_t min_w (α_t X_t + γ_t Y_t), a function of (F, W) that only
 * falls as they grow; it is minimised over every breakpoint of the k's and a 2% grid up to where
 * every whole table fits, each cell taking the k's at its lower ends and the rest at its upper
 * ends, so the minimum is a bound for every (F, W). Column copies also add their lookups to the
 * compute averages: max(F, F_avg(Y)) + max(W, W_avg(Y)) ≥ λ(F + W) + (1 − λ)(F_avg + W_avg), for
 * λ ∈ {1, ½, 0}; the largest of these bounds is returned.
 *
 * Whole lookups. Where the task or the table allows no layout that splits rows (row_wise,
 * table_row_wise, grid_shard: TorchRec's CPU runtime, a table's `sharding_types`), every piece of
 * the table serves all its lookups. A device holding pieces of total width share s pays a + β·s
 * beyond one per-table cost in each pass, and some device holds s ≥ w_min, the larger of 1 / N
 * and the narrowest piece (4 columns or the table's min_partition; 1 where neither column_wise
 * nor grid_shard may cut its columns). So a cell of (F, W) whose upper end leaves less room than
 * a + β·w_min has no plan unless the table is copied; where a piece fits, each piece is at most
 * w_max wide (the widest that fits), so there are at least ⌈1 / w_max⌉ of them, each receiving
 * the lookups once and outputting its columns once. For the step the busiest device's kernels are also at least the
 * calls plus the costliest table's τ + a + β·w_min, and of the k·N + 1 costliest such tables some device holds k + 1
 * (tables that may be copied left out).
 *
 * Data-parallel tables. A plan either has none (the bound above) or has some, and then every
 * device pays the all-reduce's latency, and each copied table, instead of its exchange terms
 * (α_t X_t + γ_t Y_t, or its share of the averaging floors), at least its gradient's bytes at the
 * all-reduce's time per byte (a copy's total compute over the devices is no less than the
 * table's floor: its lookups are counted once, its distinct rows at least once, its dense update
 * moves more than the sparse one); the bound is the smaller of the two. Over plans with copies the
 * averaging floor is also at least the calls, the latencies and Σ_t of the cheaper for the average
 * device of t sharded (its compute floor / N and its exchange floors) and t copied (its copies'
 * compute / N and δ_t): a table is copied or not for its compute and its exchanges alike (taking
 * the two cheaper apart let a table save its exchanges as a copy and its compute as a shard: 1 ms
 * of a 1,000 × 128 task's 28.5). Memory is not in the bound: where HBM
 * forces placements (full devices), plans sit further above it.
 *
 * Several hosts. A column's output crosses hosts at least once however it is split (a host's row
 * pieces reduce their partial sums before sending them across, cost/link_model.h), while every
 * copy adds intra-host bytes: the output term is the larger of Σ_t (intra part · X_t) and
 * Σ_t (inter part), each at its own cheapest.
 *
 * Input caps (step, input exposed, no table copied, each device on its own links). A device's
 * input lasts at least the latency plus m · ⌊its received bytes / N⌋, m the larger of (L − 1) /
 * intra and (N − L) / inter per byte sent each peer. So under an input maximum I no device
 * receives more than cap(I) bytes. A row piece receives its rows' lookups and a length per sample,
 * so a table needs P ≥ lookup bytes / (cap − B · length_bytes) row pieces, each beyond the first
 * paying the per-table costs (less what its floor already charges for pieces: "Pieces and the
 * cache"). A table whose rows may not split must fit one device's cap, and any table's pieces
 * lie on at most N devices, each receiving at least a length per sample. The averaging floor then
 * gains the least, over I, of (I − the input floor) plus those costs over N (analytic.cpp
 * `input_cap_excess`). Hot tables that no device can receive whole are split by any plan whose
 * input stays near the floor: at 20,000 tables on 4,096 H100s about 1,300 of them.
 *
 * Work. The (F, W) cells × tables enumerated are capped at `most_cell_tables`: beyond it every
 * other point is dropped and a cell takes its pieces for lookups at its upper end (still a bound,
 * a weaker one); tests lower the cap. The split bound raises the averaging floor only where every
 * cell lies above it, so a λ's enumeration ends at the first cell that does not (the same bound:
 * at 50,000 tables on 8,192 V100s no cell ever did, and the enumeration took 40 of the bound's
 * 90 ms). The per-table floors are computed once for the passes with and without copies.
 *
 * Mixed speeds (docs/data.md, "Mixed hardware"), and hosts with links of their own. The bound of
 * the same task on devices all as fast as the fastest, every link as fast as the fastest host's;
 * for the step, at least the averaging floor of the 1D plans with every
 * kernel term but the calls at the devices' mean speed, and every link at the devices' mean
 * bandwidth: the busiest device's kernels take no less than the work weighted by each device's
 * speed, and its links no less than the bytes over the summed bandwidth (analytic.cpp
 * `mean_speed_averaging`, `with_mean_links`). Not for max_sum, whose device sums add exchanges
 * that no speed weighs. For the step on full-duplex links, also the bound on devices all as fast
 * as the fastest with every NIC as slow as the slowest: device d of host h sends its host's share
 * f of an exchange's bytes T for the other hosts' samples ((N − L) / (N · L) · f · T on the host's
 * mean) and receives the other hosts' share for its own ((1 − f) · T / N); the larger is at least
 * their mix weighted L / N and (N − L) / N, which is (N − L) / N² · T for every f — the averaging
 * floor's inter-host bytes, through host h's own NIC (analytic.cpp `slowest_nic_floor_holds`).
 * The mean-speed floor then takes its NICs at the slowest too.
 *
 * 2D plans (plan/sharding_groups.h). A plan of layout G costs its sharding group's 1D plan plus
 * the busiest rank's replica sync, at least the sync of the average rank's bytes (Σ table bytes /
 * G). The bound is the smaller of the 1D bound and, for every layout the task allows whose sync
 * floor is below it, the group task's 1D bound without data-parallel tables (a 2D plan has none)
 * plus that floor (step; max_sum: the larger of the two), each layout's enumeration capped at
 * `most_cell_tables` / layouts.
 */
[[nodiscard]] double sim_lower_bound(const Task& task, const SimHardware& hardware, Objective objective,
                                     const InputCommOptions& input, double most_cell_tables = 5e5);

/** Fits non-negative coefficients minimising Σ ((pred − y) / y)² (y > 0 rows only). */
[[nodiscard]] SimCoefficients fit_sim_coefficients(std::span<const SimFeatures> features,
                                                   std::span<const double> measured_ms);

}  // namespace embshard
