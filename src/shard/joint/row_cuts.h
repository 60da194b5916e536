#pragma once
/**
 * @file row_cuts.h
 * @brief Every row cut of a plan set at once by a linear program: how `joint` polishes each new
 *        best plan (joint.h step 5). The search shifts rows between two pieces at a time; this
 *        moves the cuts of all row-split tables together, which lowers a plateau of many devices
 *        that no single shift lowers (docs/benchmarks.md, "Every row cut set at once").
 *
 * The placement stays: each piece keeps its device and its place in its table's row order; only
 * how many rows each piece holds changes, within ±`trust` of its rows. The program, for pieces p
 * with r_p rows, grows g_p ≥ 0 and shrinks s_p ≥ 0 (shares of r_p, each at most `trust`; h_p
 * the piece's HBM bytes per row):
 *
 *   minimise    M_in + M_fw + M_bw
 *   subject to  Σ_{p of a table} r_p (g_p − s_p) = 0                    (each table keeps its rows)
 *               fw_d + Σ_{p on d} r_p (a⁺_p g_p − a⁻_p s_p) ≤ M_fw        (likewise bw)
 *               each link term of d's input all-to-all ≤ M_in            (when the input is charged)
 *               Σ_{p on d} h_p r_p (g_p − s_p) ≤ HBM free on d
 *
 * When re-planning (`RowCutMoves`), each cut c between two pieces of a table moves by
 * R_c − L_c = Σ_{p up to c} r_p (g_p − s_p) rows, R_c, L_c ≥ 0: R_c rows go to the piece before the
 * cut, L_c to the one after, each at what its device did not hold in the old plan per row gained
 * (m_p at its end, m'_p at its start: `RowCutPiece`); the rows a piece gives back are not counted
 * (an overestimate of what moves, so the program never plans past the budget by its own count):
 *
 *               Σ_c (m_{before c} R_c + m'_{after c} L_c) ≤ the bytes the budget has left,
 *
 * less a row either way at each cut (max(m, m'): the cuts are rounded to rows afterwards),
 * and the objective adds the price per byte moved times the same sum.
 *
 * a⁺_p and a⁻_p are the piece's compute per row over the trust region, up and down (chords of the
 * model's cost, the larger taken for growth: `RowCutPiece`). The input all-to-all is written out
 * from the link model (cost/link_model.h): device d of host h (L devices a host, N in all) with
 * input bytes b_d sends b_d (L−1)/N inside its host and b_d (N−L)/N across hosts, and receives
 * (B_h − b_d)/N and (T − B_h)/N, B_h its host's bytes and T everyone's; each direction over each
 * link (full duplex), or the sum of both over each link (half duplex), at the device's own rates,
 * plus the latency. A row piece's indices follow its rows at its table's rate, its lengths do
 * not, so T does not change while each table keeps its rows. The outputs do not depend on the
 * cuts (a row piece sends its partial sums at full width).
 *
 * The answer is a proposal: `joint` re-makes the pieces, scores the plan exactly and keeps it only
 * when it is better. Clp solves it (milp/cbc_solver.h); the answer is the same on any machine.
 */
#include <cstdint>
#include <optional>
#include <vector>

#include "embshard/cost/compute_model.h"
#include "embshard/data/topology.h"

namespace embshard::detail::joint {

/** One row piece the program may re-cut: its device, its rows and what a row costs it. */
struct RowCutPiece {
  int device = 0;
  std::int64_t rows = 0;
  DeviceCompute grow;              ///< ms per row added (up to trust × rows)
  DeviceCompute shrink;            ///< ms per row taken away (up to trust × rows); ≤ grow
  double input_bytes_per_row = 0;  ///< the indices it receives per row held
  double hbm_bytes_per_row = 0;
  double moved_per_row_at_end = 0;    ///< re-planning: bytes moved per row it gains after its last row
  double moved_per_row_at_start = 0;  ///< likewise before its first row
};

/** Re-planning: what moving rows costs and how much may still move (row_cuts.h above). */
struct RowCutMoves {
  double ms_per_byte = 0.0;  ///< the price of a byte moved, in the objective's ms
  double bytes_left = 0.0;   ///< the budget's bytes the plan has not moved yet (infinite: no budget)
};

/** Every device as it is now. */
struct RowCutDevices {
  std::vector<DeviceCompute> compute;
  std::vector<double> input_bytes;
  std::vector<double> hbm_free_bytes;
};

/**
 * New row counts for `tables` (each a table's pieces in row order, each table's counts summing
 * to its rows as before), or nothing when the program has no better answer than the cuts as they
 * are, a figure is not finite, or Clp did not solve it within `time_limit_s`. `input_charged`:
 * whether the step pays the input all-to-all; `moves`: when re-planning, the moved bytes' price
 * and budget.
 */
[[nodiscard]] std::optional<std::vector<std::vector<std::int64_t>>> cut_rows(
    const Topology& topology, const std::vector<std::vector<RowCutPiece>>& tables, const RowCutDevices& devices,
    bool input_charged, double trust, double time_limit_s = 60.0, const std::optional<RowCutMoves>& moves = {});

/**
 * The program's objective, M_in + M_fw + M_bw (no moves priced), at `rows` (each table's row counts, within the
 * trust region of the pieces' rows): what `cut_rows` minimises, the model it plans with.
 */
[[nodiscard]] double row_cut_objective(const Topology& topology, const std::vector<std::vector<RowCutPiece>>& tables,
                                       const RowCutDevices& devices, bool input_charged, double trust,
                                       const std::vector<std::vector<std::int64_t>>& rows);

}  // namespace embshard::detail::joint
