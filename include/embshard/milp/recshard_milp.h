#pragma once
/**
 * @file recshard_milp.h
 * @brief RecShard's placement-and-partitioning MILP (paper 004, §4.2, constraints (1)–(12)): every
 *        table goes whole to one GPU, its hottest rows in that GPU's HBM and the rest in the host
 *        memory it reaches through UVM; the split point of every table and the GPU of every table
 *        are chosen at once so that the largest per-GPU cost is as small as possible.
 *
 * Input (`RecShardInput`, plain data: no Task or Plan yet). Table j has `rows` (hash_size_j),
 * `dim`, `bytes_per_element`, `pooling` (avg_pool_j: mean lookups per sample it appears in),
 * `coverage` (share of samples that access it) and an inverse value-frequency CDF: `icdf` has
 * K_j + 1 points (K_j = 100 in the paper, any K_j >= 1 here), `icdf[i]` = the share of the rows,
 * hottest first, that serves the share i / K_j of the table's accesses; non-decreasing, in [0, 1]
 * (icdf[K] < 1 when some rows are never accessed). The rows in HBM at step i are
 *
 *   R_j(i) = ceil(icdf[i] · rows)  (a product within 1e-6 of an integer counts as that integer)
 *
 * which is the paper's ICDF_j(i). (TableStats' 100 row counts, data/table.h, map to icdf =
 * {0, icdf[0]/num_rows, ..., icdf[99]/num_rows}.) GPU m has `hbm_bytes` (Cap_D) and `host_bytes`
 * (Cap_H, its share of host DRAM); BW_HBM = `hbm_bytes_per_s`, BW_UVM = `uvm_bytes_per_s`, B =
 * `batch_size`. Row bytes rb_j = dim_j · bytes_j; EMB_j = rows_j · rb_j (8).
 *
 * The MILP, in the paper's numbering (memory in MiB = 2^20 bytes and cost in ms inside the model):
 *
 *   minimise C
 *   (1)  c_m <= C                                               ∀m
 *   (2)  Σ_m p_mj = 1                                           ∀j
 *   (3)  p_mj ∈ {0, 1}                                          (table j on GPU m)
 *   (4)  Σ_i x_ij · R_j(i) · rb_j = mem_j                       ∀j   (HBM bytes of table j)
 *   (5)  Σ_i x_ij · i / K_j = pct_j                             ∀j   (share of accesses from HBM)
 *   (6)  Σ_i x_ij = 1                                           ∀j   (one split point)
 *   (7)  x_ij ∈ {0, 1},  i = 0..K_j                             (split at step i)
 *   (8)  EMB_j = rows_j · rb_j                                  (a constant)
 *   (9)  Σ_j p_mj · mem_j <= Cap_D(m)                           ∀m
 *   (10) Σ_j p_mj · (EMB_j − mem_j) <= Cap_H(m)                 ∀m
 *   (11) c_j = L_j · (pct_j / BW_HBM + (1 − pct_j) / BW_UVM),   L_j = avg_pool_j · rb_j · B
 *   (12) c_m = Σ_j p_mj · coverage_j · c_j                      ∀m
 *
 * (9), (10) and (12) multiply a binary by a continuous variable. They are linearised exactly with
 * two auxiliaries per (m, j), hbm_mj = p_mj · mem_j and hot_mj = p_mj · pct_j:
 *
 *   (L1) Σ_m hbm_mj = mem_j ∀j,   0 <= hbm_mj <= R_j(K_j) · rb_j · p_mj
 *   (L2) Σ_m hot_mj = pct_j ∀j,   0 <= hot_mj <= p_mj
 *   (9)  Σ_j hbm_mj <= Cap_D(m)        (10) Σ_j (EMB_j · p_mj − hbm_mj) <= Cap_H(m)
 *   (12) c_m = Σ_j coverage_j · L_j · (p_mj / BW_UVM + hot_mj · (1/BW_HBM − 1/BW_UVM))
 *
 * With binary p and (2), the upper bounds force hbm_mj = hot_mj = 0 off table j's GPU, and the
 * sums give it mem_j and pct_j: the products are exact at every integer point, so the MILP has the
 * paper's feasible decisions and costs. (L1)/(L2) are (2) multiplied by mem_j / pct_j; they give a
 * tighter relaxation than big-M envelopes (the LP bound is the "fluid" one, every table's hot
 * share counted once). Capacities are compared in whole bytes: the model's rhs is Cap − 0.5 byte
 * (Cap if Cap = 0), equivalent for integer byte counts and robust to the solver's tolerance;
 * `evaluate_recshard` re-checks every decoded plan in exact integers.
 *
 * Symmetry breaking (`RecShardSymmetry`), only between identical GPUs (equal hbm_bytes and
 * host_bytes; a class g_0 < g_1 < ... in input order):
 * - kOrderedLoads: c_{g_r} >= c_{g_{r+1}}. Valid: permuting identical GPUs changes neither
 *   feasibility nor the objective, and sorting a class by cost satisfies the rows.
 * - kTableIndex: p_{g_r, j} = 0 for r > j (table j may use only the first j+1 GPUs of a class).
 *   Valid: relabel a class by the smallest table index each GPU holds (empty GPUs last); GPU g_r
 *   then holds no table below index r.
 * - kNone: no extra rows.
 * The two are not combined (together they can cut off every optimum).
 *
 * Warm start (`recshard_greedy`): tables in decreasing order of coverage_j · c_j at "all in UVM";
 * each goes to the GPU where it leaves the smallest load, at the cheapest split that fits that
 * GPU's free HBM and host memory (with BW_HBM > BW_UVM: as many hot rows in HBM as fit), ties to
 * fewer HBM bytes and then the lower GPU index. It can fail (a table fits nowhere any more); the
 * solver then starts cold.
 *
 * Errors (`find_error_in_recshard_input`, thrown as Error by the builders): no tables or no GPUs,
 * empty or duplicate table names, non-positive rows / dim / bytes / batch, negative or non-finite
 * pooling, coverage outside [0, 1], an ICDF with fewer than 2 points, a value outside [0, 1] or
 * a step below the previous one (naming table and step), negative capacities, zero, negative or
 * non-finite bandwidths, and a table that fits on no GPU at any split even using host memory
 * (naming it, its bytes, and the largest HBM + host there is). A set of tables that fit one by one
 * but not together is a solver status (kInfeasible), not an error.
 */
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "embshard/milp/cbc_solver.h"
#include "embshard/milp/milp.h"

namespace embshard {

struct RecShardTable {
  std::string name;
  std::int64_t rows = 0;
  int dim = 0;
  int bytes_per_element = 4;
  std::int64_t state_bytes_per_row = 0;  ///< optimizer state beside each row's weights (table.h)
  double pooling = 0.0;                  ///< mean lookups per sample that accesses the table
  double coverage = 1.0;                 ///< share of samples that access the table, [0, 1]
  std::vector<double> icdf;              ///< K+1 shares of rows for access shares 0, 1/K, ..., 1
};

struct RecShardGpu {
  std::int64_t hbm_bytes = 0;   ///< Cap_D
  std::int64_t host_bytes = 0;  ///< Cap_H: this GPU's share of host DRAM
};

struct RecShardInput {
  std::vector<RecShardTable> tables;
  std::vector<RecShardGpu> gpus;
  double hbm_bytes_per_s = 0.0;  ///< BW_HBM
  double uvm_bytes_per_s = 0.0;  ///< BW_UVM
  std::int64_t batch_size = 0;   ///< B
};

enum class RecShardSymmetry { kNone, kOrderedLoads, kTableIndex };
/** "none", "ordered_loads", "table_index". */
[[nodiscard]] const char* to_string(RecShardSymmetry symmetry);

struct RecShardOptions {
  RecShardSymmetry symmetry = RecShardSymmetry::kOrderedLoads;
  bool warm_start = true;  ///< put the greedy solution in the model's initial_solution
};

/** "" or one line naming the first problem of `input` (file comment, "Errors"). */
[[nodiscard]] std::string find_error_in_recshard_input(const RecShardInput& input);

/** R_j(step): rows of table `table` in HBM when split at `step` (0..K_j). */
[[nodiscard]] std::int64_t recshard_hbm_rows(const RecShardTable& table, int step);
/** c_j of (11) in ms (not weighted by coverage) for table `table` split at `step`. */
[[nodiscard]] double recshard_table_cost_ms(const RecShardInput& input, int table, int step);

/** One table's decision: its GPU and split step (0..K_j). */
struct RecShardChoice {
  int gpu = 0;
  int step = 0;
};

struct RecShardTablePlacement {
  int gpu = 0;
  int step = 0;
  std::int64_t hbm_rows = 0;  ///< R_j(step): the hottest rows, in HBM
  std::int64_t hbm_bytes = 0;
  std::int64_t host_bytes = 0;  ///< the other rows, in host memory (UVM)
  double hbm_access_share = 0;  ///< pct_j = step / K_j
  double cost_ms = 0;           ///< c_j of (11)
  double weighted_cost_ms = 0;  ///< coverage_j · c_j, its share of its GPU's cost
};

struct RecShardGpuLoad {
  double cost_ms = 0;  ///< c_m of (12)
  std::int64_t hbm_bytes = 0;
  std::int64_t host_bytes = 0;
};

/** Decisions with everything that follows from them, recomputed in exact integers / doubles. */
struct RecShardSolution {
  std::vector<RecShardTablePlacement> tables;
  std::vector<RecShardGpuLoad> gpus;
  double max_cost_ms = 0;  ///< C = max_m c_m
  /** "" if every GPU's HBM and host capacity holds, else the first GPU and memory that overflows. */
  std::string capacity_error;
};

/** Evaluates decisions (one per table; gpu and step in range, else Error). */
[[nodiscard]] RecShardSolution evaluate_recshard(const RecShardInput& input,
                                                 const std::vector<RecShardChoice>& choices);

/** The greedy warm start (file comment); nullopt when it cannot place every table. */
[[nodiscard]] std::optional<std::vector<RecShardChoice>> recshard_greedy(const RecShardInput& input);

/**
 * `choices` with identical GPUs permuted to satisfy `symmetry`'s rows (the same costs and
 * capacity use, relabelled).
 */
[[nodiscard]] std::vector<RecShardChoice> recshard_canonical(const RecShardInput& input,
                                                             std::vector<RecShardChoice> choices,
                                                             RecShardSymmetry symmetry);

/** The model and where each symbol of the file comment lives in it (variable indices). */
struct RecShardMilp {
  MilpModel model;
  std::vector<std::vector<int>> p;    ///< p[j][m]
  std::vector<std::vector<int>> x;    ///< x[j][i], i = 0..K_j
  std::vector<int> mem;               ///< mem_j (MiB)
  std::vector<int> pct;               ///< pct_j
  std::vector<int> table_cost;        ///< c_j (ms)
  std::vector<std::vector<int>> hbm;  ///< hbm[j][m] = p_mj · mem_j (MiB)
  std::vector<std::vector<int>> hot;  ///< hot[j][m] = p_mj · pct_j
  std::vector<int> gpu_cost;          ///< c_m (ms)
  int max_cost = -1;                  ///< C (ms), the objective
  RecShardSymmetry symmetry = RecShardSymmetry::kNone;
  /** The greedy decisions in initial_solution (canonical for `symmetry`), if any. */
  std::optional<std::vector<RecShardChoice>> warm_start;
  /** False when `stop` ended the build early: the model is incomplete and must not be solved. */
  bool complete = true;
};

/**
 * Builds the MILP of the file comment; throws Error with find_error_in_recshard_input's line. It
 * grows with tables × GPUs (three variables per pair): `stop`, asked once per table and GPU row,
 * ends the build early (the result is then not `complete`).
 */
[[nodiscard]] RecShardMilp build_recshard_milp(
    const RecShardInput& input, const RecShardOptions& options = {},
    const std::function<bool()>& stop = [] { return false; });

/** About how many variables `build_recshard_milp` makes for `input`: 3 per table and GPU, and the steps. */
[[nodiscard]] double recshard_milp_variables(const RecShardInput& input);

/** Every variable's value for `choices` (they must satisfy the model's symmetry rows to be feasible). */
[[nodiscard]] std::vector<double> recshard_encode(const RecShardInput& input, const RecShardMilp& milp,
                                                  const std::vector<RecShardChoice>& choices);

/** The decisions in a solution vector of `milp.model` (p and x read as the largest per table). */
[[nodiscard]] std::vector<RecShardChoice> recshard_decode(const RecShardMilp& milp, const std::vector<double>& values);

struct RecShardResult {
  MilpResult milp;                             ///< the solver's outcome (objective and bound in ms)
  std::optional<RecShardSolution> solution;    ///< decoded and re-evaluated when milp has a solution
  std::optional<RecShardSolution> warm_start;  ///< the greedy's evaluation, if it placed everything
  int num_variables = 0;
  int num_constraints = 0;
  bool built = true;  ///< false: `stop` ended the build; milp is kNoSolution and the solver never ran
};

/**
 * Builds, solves with CBC and decodes. With a `deadline`, the build stops there (not `built`; the
 * greedy's evaluation is kept either way) and CBC gets what is left of it if less than its limit.
 */
[[nodiscard]] RecShardResult solve_recshard(
    const RecShardInput& input, const RecShardOptions& options = {}, CbcOptions cbc = {},
    std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

}  // namespace embshard
