#pragma once
/**
 * @file cbc_solver.h
 * @brief Solves a `MilpModel` (milp.h) with COIN-OR CBC 2.10 (Debian coinor-libcbc-dev).
 *
 * The model is loaded into an `OsiClpSolverInterface` (row-ordered `CoinPackedMatrix`) and, by
 * default, handed to CBC's own driver `CbcMain0` + `CbcMain1(... -solve)`: the strategy of the
 * `cbc` command (preprocessing, Cgl cuts, primal heuristics), through the 5-argument, reentrant
 * `CbcMain1` with a `CbcSolverUsefulData` (deps-probe §3; the 3-argument one in CbcModel.hpp uses
 * global state). Why this default rather than bare `CbcModel::branchAndBound()` (`kPlain`, no cuts
 * or heuristics), which deps-probe §3 found faster on a tiny symmetric bin-packing model: it takes
 * the warm start by column (`setMIPStart`) through its preprocessing; on the 397-table × 16-GPU
 * RecShard model (bench/milp_bench.cpp) its fixed set-up cost about half the CPU time of kPlain's
 * (~15 s against ~27 s at a 1 s limit: kPlain checks the warm start with an LP, then solves a root
 * without presolve), and at 10 s and 60 s both ended with the same incumbent and bound, the
 * default with as many or more nodes. Both are tested against enumeration; kPlain stays available.
 *
 * A model with no integer variable (a linear program: joint's row cuts, shard/joint/row_cuts.h)
 * goes to Clp's dual simplex alone (`ClpSimplex::initialSolve`, presolve on, interrupt handling
 * off: thread-safe), whatever the strategy: no CBC driver and so no lock (below), the time limit
 * as Clp's wall-clock limit, and at the optimum `best_bound` = `objective`. The model is loaded in one piece (O(terms);
 * row by row, its copies grew with the square of the rows: 3 of 5.6 s of a 5,000-table plan with every row cut set at
 * once, docs/benchmarks.md "The program built in one piece").
 *
 * Semantics shared by both strategies (and, but for the lock, by linear programs):
 * - `time_limit_s` is wall-clock seconds from the call (CBC `timeMode elapsed`; CBC's default is
 *   CPU time); the time spent loading the model is taken off what CBC is given. CBC checks the
 *   clock only between nodes and cut passes: the root LP, the completion of the warm start (an LP
 *   with the integers fixed) and the final clean-up LP are never interrupted, so a large model
 *   overruns the limit by their time (the 397-table × 16-GPU RecShard model: 60k columns, 15.6k
 *   rows, ~12 s of CPU on this project's VM even at a 1 s limit).
 * - A search stopped by the clock never reports kInfeasible, and a model with a feasible warm
 *   start never does either (the warm start is returned, with a note in `message`).
 * - One thread: CBC's serial code path (`threads` left at 0; Debian's CBC is built with threads).
 *   One solve at a time in a process: CBC's driver keeps static state, so calls from several
 *   threads wait for each other. The wait counts against a call's time limit; one that gets no
 *   turn within it returns its warm start (kFeasible) or kNoSolution, saying so in `message`.
 * - `relative_gap`: CBC stops when (incumbent − bound) ≤ gap · |incumbent| (`ratioGap`); the
 *   status is then `kOptimal` ("optimal within the gap"). 0 asks for a proof.
 * - A warm start (`model.initial_solution`) is first checked with `check_solution`; a feasible one
 *   is given to CBC (kDefault: `setMIPStart` by column, which CBC completes by fixing the integers
 *   and solving the LP of the continuous part; kPlain: `setBestSolution`, which also sets the
 *   cutoff). If CBC ends without a solution better than the warm start, the warm start is the
 *   result, so a time limit always returns at least the warm start (`kFeasible`).
 * - Integer variables are rounded to the nearest integer in the returned values; the result is
 *   checked with `check_solution(model, values, 1e-6)` and a failure is put in `message`.
 * - Output is silent unless `log` is true (then CBC's log goes to stdout).
 * Only `src/milp/cbc_solver.cpp` includes COIN headers.
 */
#include <string>
#include <vector>

#include "embshard/milp/milp.h"

namespace embshard {

enum class CbcStrategy {
  kDefault,  ///< CbcMain0 + CbcMain1 "-solve": preprocessing (off when under 10 s are left: CBC 2.10.8
             ///< can crash in it when a short limit runs out), cuts, heuristics (the cbc binary's)
  kPlain,    ///< CbcModel::branchAndBound() alone
};

struct CbcOptions {
  double time_limit_s = 60.0;  ///< wall clock; must be > 0
  double relative_gap = 1e-4;  ///< CBC's ratioGap; >= 0
  CbcStrategy strategy = CbcStrategy::kDefault;
  bool log = false;  ///< print CBC's log to stdout
  /** kDefault only: more cbc parameters put before "-solve", e.g. {"-preprocess", "off"}. */
  std::vector<std::string> extra_args;
};

/**
 * Solves `model` (validated with find_error_in_model first: an invalid model or bad options throw
 * Error naming the problem). Infeasible or unbounded models are statuses, not errors.
 */
[[nodiscard]] MilpResult solve_with_cbc(const MilpModel& model, const CbcOptions& options = {});

}  // namespace embshard
