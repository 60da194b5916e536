#pragma once
/**
 * @file joint.h
 * @brief `joint`: embshard's own planner. Every table's layout — whole, row-wise over a group of
 *        devices, column-wise pieces, and each piece's split between HBM and UVM — is chosen
 *        together with the device of every piece, by local search on the exact objective of the
 *        cost model it is given.
 *
 * Search space. A table t of R rows and C columns takes one layout:
 *   whole       one piece (table_wise)
 *   rows k      k pieces of ⌈R/k⌉ rows in order (the last shorter), on k distinct devices
 *               (row_wise; table_row_wise when the devices share a host in a multi-host topology);
 *               the search then makes the ranges uneven where balance needs it (a share of 1/2 …
 *               1/32 of a piece's rows moves to another piece of the table)
 *   columns k   k pieces of near-equal widths, each a multiple of 4, on k distinct devices
 *               (column_wise)
 *   grid c × r  c column pieces as above, each cut into r row blocks as above, on c·r distinct
 *               devices (grid_shard), for c, r ∈ {2, 3, 4} within `max_parts`
 *   copies      a whole copy on every device (data_parallel, plan/plan.h), where a copy fits
 *               every device's HBM (`may_replicate`) and the cost model can cost copies: no
 *               exchange, each copy serves its device's samples, the gradients are all-reduced;
 *               below 64 devices (a copy is a piece per device: at the fast path's sizes the
 *               deadline is better spent on the other moves)
 * for k from 2 to `max_parts` (default: the number of devices, at most 64) where the task and the table's
 * constraints allow the type. Where the task and the table allow UVM, a piece keeps in HBM only
 * the rows its table's profile touched (the ICDF's last step, in the piece's share: they serve every
 * lookup) and the rest in UVM, as RecShard does; a piece placed on a device whose HBM cannot hold
 * even those keeps as many as fit — its hottest (`Shard::hbm_rows`) — and the rest in UVM, when
 * the device's host memory holds it.
 *
 * State. Per device the model's additive terms (cost/compute_model.h `is_additive`: sim) or its
 * shards (other models: asked per device, cached), the output columns it sends, the index bytes it
 * receives and its memory. `objective()` is the model's exact objective of the current plan: the
 * same compute, comm and input all-to-all `assemble_breakdown` would produce.
 *
 * Algorithm (the same plan for a seed and budget on any machine and any number of threads,
 * unless the wall-clock safety stop cuts it short):
 *   1. exact start on tiny tasks: when the table-wise plans number at most `exact_limit`
 *      (devices^tables, up to relabelling identical devices), every one is scored and the best
 *      starts the search — so `joint` is never worse than `exhaustive`;
 *   2. otherwise a greedy start: tables by decreasing lookups × dim, each whole on the device that
 *      keeps the objective lowest (splits come from the search) — except, above one host, a table
 *      holding more than `split_start` (0.5) of an average device's lookups or lookups × dim,
 *      which starts in as many row pieces as keep each below that, each piece placed the same way
 *      (several such tables each set a term's maximum on their device, so splitting one alone
 *      never lowers it and the search does not find the split; docs/benchmarks.md, "Heavy tables
 *      start in pieces"); from 64 hosts on such a table first takes its host, the first of the
 *      four whose loads so far — every table placed, its compute whole, its columns and its
 *      lookups, each in units of its average per host — have the smallest dot product with its
 *      own (where it raises the sum of the hosts' squared loads least), and its pieces are placed
 *      the same way among that host's devices (a piece's candidates cover only a few hosts:
 *      docs/benchmarks.md, "Heavy tables take their host first"); a table that fits no device
 *      whole takes whichever layout, pieces placed the same way, leaves the lowest objective;
 *      when one fits nowhere (memory is tight), the start is made again, tables by decreasing bytes;
 *      once the time left is what placing the rest that way takes (~10 µs a table), the
 *      remaining tables go in their start layouts, each piece on the least loaded device it
 *      fits, unscored. Below 64 devices a start that split tables is made again with every table
 *      whole; both are searched (step 3, before any perturbation) and the better is kept
 *      (docs/benchmarks.md, "Both starts below 64 devices");
 *   3. local search until no move helps, around the critical devices (those that set a term of
 *      the objective): move a piece to another device; make a row layout uneven, re-making only
 *      the pieces whose rows change (beyond 32 devices only between neighbouring pieces; up to
 *      32 on several hosts only where it saves at least 0.01% of the objective, docs/benchmarks.md
 *      "Row shifts that pay"); on the fast path (below)
 *      up to 1,024 devices, share the whole tables of a critical device and of the least loaded
 *      device by each term out between the two again (3 to 16 tables: every split estimated,
 *      `best_splits`, the best six made and scored), which finds the exchanges of several tables
 *      for several that single moves and swaps cannot (docs/benchmarks.md, "Two devices
 *      re-partitioned"); on the fast path, swap a whole table of a critical device with a whole
 *      table of one of the 128 least loaded devices by each term that device sets, every pair
 *      estimated (`best_swaps`: no term of either device may pass its largest, the device's own
 *      terms must fall; the best six by the spread made and scored), which finds the partner far
 *      from the candidate devices that a table's dims, lookups and compute together need
 *      (docs/benchmarks.md, "Swaps with any device"); when polishing (below), swap a piece with a
 *      lighter one elsewhere (beyond 32 devices one on a candidate device); re-lay out one of the
 *      four heaviest tables there (eight up to 32 devices on several hosts), or when re-planning
 *      the first four (eight) in its order (below): up to 32 devices, on one host or where a
 *      table has at most six layouts, every layout is placed piece by piece, greedily; otherwise
 *      each layout (beyond 32 devices those of at most twice the table's weight in average device
 *      loads pieces) is first scored with its pieces unscored on the least loaded devices and only
 *      the best are placed: three beyond 32 devices, else six and the best of each other kind of
 *      layout (docs/benchmarks.md, "Re-layouts scored first"). A move is taken when it lowers the
 *      objective, or keeps it and lowers the spread Σ_d (device step)² (which breaks
 *      plateaus; the objective never rises along a chain of moves, so none can cycle). On the fast
 *      path a device on which a whole pass of one kind of move (moves, row shifts, re-partitions,
 *      wide swaps) found nothing is left out of that kind until its load changes (don't-look
 *      marks): the budget goes to devices that changed, not to passes that fail again. A local
 *      optimum better than the best so far is polished (the search again, with swaps) and kept;
 *   3b. once, below 64 devices, groups of data-parallel copies (the k most promising tables for
 *      k = 1, 2, 4, …), the rest of the plan built again around them and searched as in 3;
 *   4. iterated local search in `chains` chains (default 2), each from the best plan with its own
 *      seed and an equal share of what is left of the budget, run at once on the context's threads
 *      where the cost model can be copied (`CostModel::clone`): re-lay out a few random tables,
 *      search again, keep what is better; a chain stops after `patience` rounds without
 *      improvement or when its share is spent; the best chain's plan wins;
 *   5. with an additive model and `step`, each time the search keeps a local optimum (in steps
 *      2–4, the whole start's and the copy groups' included) holding at most `cut_rows` (1,500)
 *      row pieces of tables laid out in rows (all in HBM, pooled, 20 rows or more each): the same
 *      plan with every row cut set at once by a linear program (row_cuts.h), each piece's rows
 *      within ±5% a round, the placement kept; up to three rounds while the plan scores better
 *      (one above 1,000 pieces). The search's shifts move rows between two pieces; the program
 *      moves every cut, which lowers a plateau of devices no single shift lowers. The search goes
 *      on from the plan as it was (each device's table order and the objective's breakdown put
 *      back), the step's work is not counted, and the better of the search's best and the step's
 *      best is returned: for a seed and budget, unless the deadline cuts the run short, a 1D plan
 *      is never worse than with `cut_rows=0` and is the same plan where the step does not win
 *      (under `groups=auto` the 2D layouts searched follow the 1D plan, so there this holds for
 *      each layout's search), and a larger budget never gives a worse plan. A search keeps
 *      several local optima and each costs a program (Clp alone, milp/cbc_solver.h): at 5,000 ×
 *      1,024 all of them together add 0–0.4 s with `cut_rows=6000` for 0–0.15%, hence the limit
 *      (docs/benchmarks.md, "Every row cut set at once", "The program built in one piece").
 *      Re-planning, only in a search held to a movement cap (eval/replan.h: those that end at
 *      the budget), and the program then prices the rows each cut moves and keeps them within
 *      what the cap leaves (row_cuts.h). Not with `torchrec=true` or `keep_layouts`.
 * Budget. `work` counts work units after the start — objective evaluations, pieces placed or
 * taken off (at scale a piece's trees cost more than reading an objective) and one per 16 splits
 * a re-partition estimates or pairs a wide swap estimates —: 1,500,000 by
 * default up to 8 devices and as much again for every 8 more (a 16-GPU task's first descent and
 * copy groups alone took 1,500,000, leaving no perturbation round), 3,000,000 on the fast path
 * (about 0.8 s at 5,000 tables × 1,024 devices on one core) up to 5,000 tables, and beyond that
 * as much times √(tables / 5,000) up to 50,000 tables, at most √10 times as much (about 2.3 s at
 * 20,000 × 4,096 and 4.4 s at 50,000 × 8,192 on this project's VM; docs/benchmarks.md, "The
 * budget grows with the tables", "The budget up to 50,000 tables" and "The search's trees and the
 * task reader made cheaper"): `default_work`.
 * Every phase keeps the best plan of its own deterministic trajectory and stops when the budget
 * is spent, so a larger budget never returns a worse plan (under `groups=auto` the 2D layouts
 * searched follow the 1D plan, so there this holds for each layout's search). `time_ms` (default 60 s, the context's
 * deadline when sooner) is a safety stop that covers the bound, the search and finishing the plan
 * (the search stops ~3 µs a table early): past it the best plan so far is returned, and no 2D
 * layout is searched once the 1D search has stopped there. The bound does not steer the search:
 * given a second thread (the context's) it is computed beside it, else first; the plan and the
 * bound are the same either way. The bound and placing every table once are not cut short: on this
 * project's VM they take under 0.1 s at 20,000 tables × 4,096 devices, and at 50,000 × 8,192
 * about 0.11–0.13 s one after the other (the bound 0.05 s) and 0.10–0.11 s side by side, the floor
 * of a deadline there; a run that ends more than 10% past its deadline says so in the solver line, with the
 * bound's time (docs/benchmarks.md, "The deadline at scale", "The bound beside the search",
 * "Placing every table once at half the cost", "The bound's enumeration ends at its first cell below").
 * Where the 1D plan is returned on the fast path without 2D layouts judged
 * beside it, the plan's objective, which the gap to the bound is reported from, is the search's
 * own (equal to judging the plan up to its integer units, 1e-9 ms a piece); elsewhere the plan is
 * judged.
 * With `torchrec=true` the row layouts are those TorchRec's training path can run (the export,
 * plan/torchrec_export.h, rejects others): rows over every device, or over every device of one
 * host (table_row_wise, multi-host topologies), in blocks of ⌈R/k⌉ in rank order, never moved or
 * made uneven; the Python package's TorchRec planner asks for it.
 * At large sizes (more than 32 devices) a piece is tried only on the `candidates` devices with the
 * least load (fast_step.h `LoadIndex`: O(k log devices)) — on the fast path (below) their compute
 * and their own sending and receiving times, the spread's terms — and there also on the least
 * loaded by each term alone (compute; output sent, its host's reduced rows included; input), one
 * each (a straggler of one term is relieved where that term is low, not the sum). A row piece of a
 * table already on some hosts is tried instead on the free devices of those hosts (with room in
 * HBM), so its partial sums cross hosts once per host, reduced: the table opens a new host only
 * when its hosts are full (docs/benchmarks.md, "The search at scale"). From 64 devices on, with an additive
 * model, the link model on full-duplex links and `step` (input exposed or omitted), the objective is kept
 * up to date per change (fast_step.h: O(devices per host + log devices) instead of O(devices)), and the spread is
 * the sum of the squares of each device's compute and own sending times, and of each host's
 * reduced rows' sending time, in whole µs, kept per change too.
 *
 * Re-planning (`Sharder::shard_from`, shard/sharder.h `PlanOrigin`; eval/replan.h). The search starts
 * from the given plan (each placement loaded as its layout, each piece on its device, its HBM/UVM
 * split made again) instead of steps 1–2, and its score adds `ms_per_moved_byte` × the bytes its
 * pieces hold that their devices did not hold in the old plan (`State::moved_bytes`, kept per
 * change: a piece's own count, `Piece::moved_bytes`); a plan moving more than `max_moved_bytes`
 * is never taken (a perturbation past it is a lost round; a wide swap's estimate leaves the price
 * out, its score has it). The local search takes the tables on the critical devices — for every
 * move, row shift and re-layout — by lookups × dim per weight byte (for a whole table, its lookups
 * per row over its element size), most first, instead of heaviest first: a move that relieves a
 * device for few bytes is found before one that moves a big table (docs/benchmarks.md,
 * "Re-planning moves the densest tables first"). With `rebuild_bytes`, before the search the
 * devices above the mean load (`State::device_load_ms`: compute and exchange time) give up their
 * whole tables — with `rebuild_split_tables` also those in pieces, every piece on such a device;
 * never a colocated table — most load per byte first, each device up to its share of that many
 * bytes (its excess over the mean in proportion to all devices' excess; within what the cap
 * leaves), and those tables are placed again as the greedy start places them (outside the
 * budget; not under `keep_layouts`); the given plan stays a candidate, so the search never ends
 * worse than it (docs/benchmarks.md, "Re-planning rebuilds the overloaded devices"). 1D only.
 *
 * 2D (plan/sharding_groups.h; `groups=auto`, the default, on more than one host). The 1D search
 * runs first, on its whole budget (its plan is `groups=none`'s). Each 2D layout the task allows is
 * then predicted from the 1D plan: its step with its exchanges' time scaled by that of an
 * evenly spread all-to-all in a group (the group's share of the batch, its peers on and off their
 * hosts) against one over all ranks, plus the floor of the replica sync (the average rank's
 * bytes). The three best predictions at most 10% above the 1D plan's objective (the prediction
 * misses what a group's search gains in balance), whose sync floor is below that objective and whose
 * group's memory can hold every table, are searched on their group's task (a model of the same
 * kind built for it, `CostModel::for_task`), each with a sixth of its group task's default
 * budget more, and judged on the whole objective; the best plan, 1D or 2D, wins. A group's search
 * sees the sync: each device's all-reduce term carries its bytes' sync (`State::set_replica_sync`),
 * so its objective is the 2D plan's. `groups=G` searches only the layouts of G ranks (strided and
 * contiguous, where valid) with the whole budget; `groups=none` keeps to 1D. A group's search makes
 * no data-parallel copies (a 2D plan has none), and `objective=balance` keeps to 1D.
 */
#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/plan/plan.h"
#include "embshard/shard/sharder.h"
#include "shard/joint/fast_step.h"

namespace embshard::detail::joint {

/**
 * Two devices and the whole tables they hold, for a re-partition (step 3): each table's estimated
 * load on either device per spread term (ms: forward, backward, twice the output sent, the input
 * received; compute exactly, output and input at the higher of the two devices' ms per column
 * and per input byte), the devices' terms without those tables, and the side each table is on
 * now (bit i: table i on devices[1]); when re-planning, what each table's moved bytes would cost on either
 * device (the price × the bytes that device did not hold in the old plan).
 */
struct Repartition {
  std::array<int, 2> devices{};
  std::array<std::array<double, 4>, 2> base{};
  std::vector<int> tables;
  std::vector<std::array<double, 4>> loads;
  std::vector<std::array<double, 2>> moved_ms;  ///< per side (all 0 without a price)
  std::uint32_t now = 0;
};

/**
 * The `count` splits of `r`'s tables, other than the current one, that the estimate ranks best:
 * by Σ over the terms of the larger of the two devices plus the tables' moved bytes' cost, then
 * by Σ of the squares. Every split is
 * visited in Gray-code order, each one table away from the last (O(terms) apiece); at most 31
 * tables.
 */
[[nodiscard]] std::vector<std::uint32_t> best_splits(const Repartition& r, std::size_t count);

/**
 * A device as a wide swap (step 3) sees it: its spread terms in ms (as Repartition's), its ms per
 * output column and per input byte, and per whole table that may change device its load in raw
 * units (forward ms, backward ms, output columns, input bytes).
 */
struct SwapDevice {
  std::array<double, 4> terms{};
  double per_col = 0.0;
  double per_input = 0.0;
  std::vector<int> tables;
  std::vector<std::array<double, 4>> loads;
};

/** One swap of a table of the critical device with a table of partner `partner` (an index). */
struct SwapPair {
  double spread = 0.0;  ///< the change of Σ of the two devices' squared terms (< 0)
  int table = -1;       ///< the critical device's table
  int other = -1;       ///< the partner's table
  int partner = -1;
};

/**
 * The `count` swaps of a table of `critical` with a table of one of `partners` that the estimate
 * ranks best, lowest spread first: each table's terms at the higher of the two devices' ms per
 * column and per input byte (compute as it is); only swaps after which no term of either device
 * passes that term's largest over all devices (`most`), every term `sets` marks (those the
 * critical device sets) falls on it, and the spread falls. `estimates` grows by the pairs looked at.
 */
[[nodiscard]] std::vector<SwapPair> best_swaps(const SwapDevice& critical, const std::array<bool, 4>& sets,
                                               const std::vector<SwapDevice>& partners,
                                               const std::array<double, 4>& most, std::size_t count,
                                               std::int64_t& estimates);

/** The default budget in work units (`work=0`; "Budget" above) of a task of `tables` tables on
 *  `devices` devices, on the fast path (`incremental`: the objective kept per change) or not. */
[[nodiscard]] std::int64_t default_work(int tables, int devices, bool incremental);

/** With more devices than this a piece is tried only on the `candidates` least loaded (joint.h). */
inline constexpr int kAllCandidatesUpTo = 32;

/** A table's layout: whole, or split into `parts` row ranges or column ranges. */
struct Layout {
  enum class Kind { kWhole, kRows, kColumns, kGrid, kCopies };
  Kind kind = Kind::kWhole;
  int parts = 1;  ///< pieces; a grid's column pieces
  /// ≥ 0: piece i sits on device first_device + i, fixed (TorchRec's row-wise blocks in rank order)
  int first_device = -1;
  int row_parts = 1;  ///< a grid's row blocks per column piece
  friend bool operator==(const Layout&, const Layout&) = default;
};

/** `Options::groups`: choose among every 2D layout the task allows, and 1D. */
inline constexpr int kAutoGroups = -1;

/** The search's settings; their defaults are the `joint` spec's (joint.cpp derives it from them). */
struct Options {
  Objective objective = Objective::kStep;
  double time_ms = 60000.0;  ///< wall-clock safety stop (joint.h)
  int patience = 40;
  std::int64_t work = 0;  ///< the budget in work units after the start; 0: the path's default (joint.cpp)
  int chains = 2;         ///< chains of perturbation rounds (joint.h)
  int max_parts = 0;      ///< 0: the number of devices, at most 64
  bool rows = true;
  bool columns = true;
  bool uvm = true;
  bool data_parallel = true;  ///< try copies on every device (joint.h)
  bool grids = true;          ///< try column × row grids (joint.h)
  bool torchrec = false;      ///< only layouts TorchRec's training path runs (joint.h)
  /// Only pieces move: every table keeps its layout and shards from the start, and only whole
  /// tables and column pieces change device, each keeping its rows in HBM (a re-plan TorchRec's
  /// reshard can run, eval/replan.h); no re-layout, row shift or copies
  bool keep_layouts = false;
  /// Step 5 (row_cuts.h): each local optimum the search keeps is also tried with every row cut set
  /// at once by a linear program, where it has at most this many row pieces (0: never)
  int cut_rows = 1500;
  std::int64_t exact_limit = 200000;
  int candidates = 8;
  /// Above one host, a table holding more than this share of an average device's lookups or
  /// lookups × dim starts in row pieces that each hold at most this share (joint.h step 2); 0: none
  double split_start = 0.5;
  /// 2D layouts tried (plan/sharding_groups.h): kAutoGroups every one the task allows, 0 none,
  /// G > 0 only layouts of G ranks per group (joint.h, "2D")
  int groups = kAutoGroups;
  double work_share = 1.0;  ///< the share of the budget this search gets (a 2D candidate's)
  /// A 2D layout's replica sync, per device by its bytes (the search of a group's task; joint.h)
  ReplicaSyncCost sync;
  /// A re-plan (shard/sharder.h PlanOrigin): the search starts from `start` instead of its own
  /// start, and each byte moved from `old` is priced into the score (1D only)
  const PlanOrigin* origin = nullptr;
};

/** Per table of the task, the old plan's shards of it when it has the table with the same shape
 *  (else none: the table is created, and its bytes never count as moved); `copies`: data-parallel. */
struct Origin {
  std::vector<std::vector<Shard>> shards;
  std::vector<char> copies;
  int old_devices = 0;
};

/**
 * One piece of a table on a device, with what it adds to the device. Costs are kept in integer
 * units (`kUnitsPerMs`) so that adding and removing pieces is exact: a device's sums depend only
 * on which pieces it holds, never on the order moves were tried in.
 */
inline constexpr double kUnitsPerMs = 1e9;
struct Piece {
  PlacedShard placed;
  std::int64_t fw_units = 0;  ///< its additive part (additive models only), in 1e-9 ms
  std::int64_t bw_units = 0;
  std::int64_t input_bytes = 0;  ///< indices and lengths it receives per step
  std::int64_t hbm_bytes = 0;
  std::int64_t uvm_bytes = 0;
  std::int64_t gradient_bytes = 0;  ///< a data-parallel copy's gradient (all-reduced), else 0
  std::int64_t moved_bytes = 0;     ///< what its device did not hold in the origin's old plan (State::set_origin)
};

/** What one device holds. */
struct DeviceLoad {
  std::int64_t fw_units = 0;  ///< Σ pieces' cost (additive models)
  std::int64_t bw_units = 0;
  int pieces = 0;
  int copies = 0;                 ///< of them, copies of data-parallel tables (a second fused call)
  std::int64_t dims = 0;          ///< output columns (comm_model.h OutputDims: pooled + partial)
  std::int64_t partial_dims = 0;  ///< of them, partial sums of row ranges
  std::int64_t input_bytes = 0;
  std::int64_t hbm_bytes = 0;
  std::int64_t uvm_bytes = 0;
};

/** The plan being searched: pieces per table and the loads they put on the devices. */
class State {
 public:
  State(const Task& task, CostModel& cost, Objective objective, const Context& ctx);

  [[nodiscard]] int num_devices() const { return static_cast<int>(devices_.size()); }
  [[nodiscard]] int num_tables() const { return static_cast<int>(tables_.size()); }
  /** The device of a placed member of `table`'s colocate group (where it must go), else −1. */
  [[nodiscard]] int colocated_device(int table) const;
  /** The members of `table`'s colocate group, itself included (empty when it has none). */
  [[nodiscard]] const std::vector<int>& colocated_members(int table) const {
    static const std::vector<int> kNone;
    return colocated_with_.empty() ? kNone : colocated_with_[static_cast<std::size_t>(table)];
  }
  /** Whether `table` is in any placement group (it then never takes copies on every device). */
  [[nodiscard]] bool in_placement_group(int table) const {
    return colocated(table) || (!separated_from_.empty() && !separated_from_[static_cast<std::size_t>(table)].empty());
  }
  /** Whether `table` is in a colocate group (it then takes the whole layout only). */
  [[nodiscard]] bool colocated(int table) const {
    return !colocated_with_.empty() && !colocated_with_[static_cast<std::size_t>(table)].empty();
  }
  [[nodiscard]] const std::vector<Piece>& pieces(int table) const { return tables_[static_cast<std::size_t>(table)]; }
  [[nodiscard]] const Layout& layout(int table) const { return layouts_[static_cast<std::size_t>(table)]; }
  [[nodiscard]] const DeviceLoad& load(int device) const { return devices_[static_cast<std::size_t>(device)]; }

  /**
   * `shard` of `table` as a piece on `device`: rows that do not fit the device's free HBM go to
   * UVM when `uvm` allows; false when it does not fit at all, or the task's placement groups forbid
   * the device (a colocated table away from its placed group, a separated one beside another).
   */
  [[nodiscard]] bool make_piece(int table, Shard shard, int device, bool uvm, Piece& out);
  /** Charges every device `sync` of its bytes (hbm + uvm) in its all-reduce term: a 2D layout's
   *  replica sync (plan/sharding_groups.h); before any piece is added. */
  void set_replica_sync(const ReplicaSyncCost& sync);
  /** Where a re-plan came from: pieces count the bytes their device did not hold (`moved_bytes`). */
  void set_origin(Origin origin) { origin_ = std::move(origin); }
  /** The origin's old shards of `table` (empty without an origin, or for a created table). */
  [[nodiscard]] const std::vector<Shard>& origin_shards(int table) const {
    static const std::vector<Shard> kNone;
    return origin_.shards.empty() ? kNone : origin_.shards[static_cast<std::size_t>(table)];
  }
  /** The bytes of `shard` of `table` its device did not hold in the origin's old plan. */
  [[nodiscard]] std::int64_t moved_bytes_of(int table, const Shard& shard) const;
  /** Σ over the pieces of the bytes moved from the origin's old plan (0 without one). */
  [[nodiscard]] std::int64_t moved_bytes() const { return moved_; }
  /** Whether pieces keep only the rows the profile saw in HBM, where the task allows UVM (default). */
  void set_cold_rows_to_uvm(bool on) { cold_rows_to_uvm_ = on; }
  void add(const Piece& piece);
  /** Takes every piece of `table` off its devices and returns them. */
  std::vector<Piece> remove_table(int table);
  void set_layout(int table, Layout layout) {
    layouts_[static_cast<std::size_t>(table)] = layout;
    refresh_type(table);
  }
  /** Pieces placed or taken off so far: with evaluations, the search's work units (joint.h). */
  [[nodiscard]] std::int64_t changes() const { return changes_; }
  /** Takes the table's last piece off its device and returns it. */
  Piece pop_piece(int table);
  /** Takes piece `index` of `table` off its device (its slot stays until `place`). */
  Piece lift(int table, std::size_t index);
  /** Puts `piece` into slot `index` of its table (after `lift`; made by `make_piece` meanwhile). */
  void place(std::size_t index, const Piece& piece);

  /** The model's objective of the current plan (lower is better: `balance` is negated). */
  [[nodiscard]] double objective();
  /** Σ_d (device step)² of the last `objective()`, the tie-breaker. */
  [[nodiscard]] double spread() const { return spread_; }
  /** A fused call's cost (additive models only; compute_model.h `device_overhead`). */
  [[nodiscard]] const DeviceCompute& overhead() const { return overhead_; }
  /** Whether the model's device cost adds up over pieces (compute_model.h `is_additive`). */
  [[nodiscard]] bool additive() const { return additive_; }
  /** One piece's additive cost (additive models only). */
  [[nodiscard]] DeviceCompute shard_compute(const PlacedShard& shard) {
    return cost_.compute().shard_compute(task_, shard);
  }
  /** Whether the objective is kept up to date per change (fast_step.h). */
  [[nodiscard]] bool incremental() const { return fast_; }
  /** A device's forward and backward compute as the objective counts it. */
  DeviceCompute device_compute(int device);
  /**
   * A device's own load in ms (ranks candidates): on the fast path its compute and its own sending
   * and receiving times on its links (the spread's terms, joint.h), else its compute and its bytes
   * over an intra-host link.
   */
  [[nodiscard]] double device_load_ms(int device);
  /** What a device is ranked by: its whole load (device_load_ms), or on the fast path one term
   *  of it: its compute, its output sent (its host's reduced rows included), its input received. */
  enum class LoadTerm { kAll, kCompute, kOutput, kInput };
  /** The terms least_loaded can rank by, the first ones of LoadTerm: kAll, and on the fast path
   *  the others (kInput where the input all-to-all is exposed). */
  [[nodiscard]] int load_terms() const { return static_cast<int>(loads_.size()); }
  /** Device `device`'s load by `term` (one of load_terms()), as least_loaded ranks it. Each index
   *  is brought up to date only when it is asked: every change marks each term of every device
   *  whose loads it touches (a host's reduced rows: every device of the host). */
  [[nodiscard]] double term_load_ms(int device, LoadTerm term);
  /**
   * Appends to `out` up to k devices not marked in `skip`, least loaded first (by `term`, then
   * HBM used, then index), among those with `bytes` of HBM free if any has, else among all; only
   * with more than kAllCandidatesUpTo devices (kept in LoadIndexes, refreshed where pieces changed).
   */
  void least_loaded(int k, std::int64_t bytes, const std::vector<bool>& skip, std::vector<int>& out,
                    LoadTerm term = LoadTerm::kAll);
  /** On the fast path, the spread's terms of `device` in whole µs: forward and backward compute,
   *  twice the output it sends, the input it receives. */
  [[nodiscard]] const std::array<std::int64_t, 4>& spread_terms_us(int device) const {
    return fast_terms_[static_cast<std::size_t>(device)];
  }
  /** Devices that set a term of the objective in the last `objective()`. */
  [[nodiscard]] std::vector<int> critical_devices() const;
  /** The tables with a piece on `device` (in no particular order; a table once per piece). */
  [[nodiscard]] const std::vector<int>& tables_on(int device) const {
    return device_tables_[static_cast<std::size_t>(device)];
  }

  [[nodiscard]] Plan plan() const;
  /** A copy of the pieces and layouts (to restore the best plan found), flat: one allocation
   *  however many tables (a search at scale takes one at every improvement). */
  struct Snapshot {
    std::vector<Piece> pieces;       ///< every table's, table by table
    std::vector<std::size_t> first;  ///< table t's are pieces[first[t], first[t + 1])
    std::vector<Layout> layouts;
    [[nodiscard]] std::span<const Piece> table(int t) const {
      const auto i = static_cast<std::size_t>(t);
      return {pieces.data() + first[i], first[i + 1] - first[i]};
    }
  };
  [[nodiscard]] Snapshot snapshot() const;
  void restore(const Snapshot& snapshot);
  /** Every device's tables in the order `tables_on` gives them (a restore may reorder them). */
  [[nodiscard]] const std::vector<std::vector<int>>& table_order() const { return device_tables_; }
  /** Puts back the order `table_order` gave, of the same placement (its sizes checked). */
  void set_table_order(std::vector<std::vector<int>> order);

 private:
  void apply(const Piece& piece, int sign);
  void count_reduced(const Piece& piece, int sign);
  void update_fast(int device);
  void update_spread(int device, const DeviceCompute& compute);
  /** The sharding type `plan()` gives `table` for its layout and pieces. */
  [[nodiscard]] ShardingType type_of(int table) const;
  /** The task's placement groups per table (data/task.h `PlacementGroups`), for make_piece. */
  void index_placement_groups();
  /** Whether a piece of `table` on `device` keeps the placement groups given the pieces placed. */
  [[nodiscard]] bool keeps_placement_groups(int table, int device) const;
  /** Recounts `table`'s sharding type after its layout or pieces changed. */
  void refresh_type(int table);
  /** The current plan's exchange groups, as `exchange_groups(plan())` counts them. */
  [[nodiscard]] int exchange_groups() const;

  const Task& task_;
  CostModel& cost_;
  Objective objective_;
  const Context& ctx_;
  bool additive_;
  bool cold_rows_to_uvm_ = true;
  DeviceCompute overhead_;
  std::vector<DeviceLoad> devices_;
  std::vector<std::vector<Piece>> tables_;
  std::vector<Layout> layouts_;
  std::vector<std::vector<int>> device_tables_;  ///< per device, the table of each of its pieces
  /// Per table the sharding type its plan entry has now (−1: no pieces), and per type how many
  /// tables have it: the plan's exchange groups (cost/link_model.h `exchange_groups`) in O(1).
  std::vector<int> table_type_;
  std::array<int, kNumShardingTypes> type_tables_{};
  // Non-additive models: each device's shards and its cached compute.
  std::vector<std::vector<PlacedShard>> by_device_;
  std::vector<DeviceCompute> cached_;
  std::vector<bool> dirty_;
  CostBreakdown breakdown_;
  OutputDims outputs_;
  /// Per host the columns its partial sums reduce to (OutputDims::reduced), from the number of
  /// row pieces of each (table, first column) on each host (`reduced_key`).
  std::vector<std::int64_t> host_reduced_;
  std::unordered_map<std::uint64_t, int> reduced_pieces_;
  std::vector<double> fw_comp_;
  std::vector<double> input_bytes_;
  std::vector<double> input_ms_;
  std::vector<DeviceComm> comm_;
  /// Σ of the data-parallel tables' gradient bytes (device 0's copies: every device holds all).
  std::int64_t gradient_bytes_ = 0;
  double spread_ = 0.0;
  std::int64_t changes_ = 0;
  Origin origin_;
  std::int64_t moved_ = 0;
  /// Per table the members of its colocate group (itself included; empty if none) and the tables
  /// it must not share a device with; both empty when the task has no placement groups.
  std::vector<std::vector<int>> colocated_with_, separated_from_;
  // More than kAllCandidatesUpTo devices: the devices by load, refreshed lazily (least_loaded).
  std::vector<LoadIndex> loads_;  ///< per LoadTerm (kAll only off the fast path)
  /** Queues `device`'s loads for refreshing (least_loaded), once a term; nothing below that many
   *  devices. */
  void mark_load_stale(int device);
  std::vector<std::vector<int>> stale_loads_;  ///< per LoadTerm: the devices its index has out of date
  std::vector<std::uint8_t> stale_terms_;      ///< per device: a bit per LoadTerm whose index has it out of date
  static_assert(static_cast<int>(LoadTerm::kInput) < 8, "a bit per LoadTerm in stale_terms_");
  // Many devices, an additive model, the link model on full-duplex links and `step` (fast_step.h):
  // kept per change.
  bool fast_ = false;
  bool input_exposed_ = false;
  FastExchange out_, in_;
  MaxTree fw_tree_, bw_tree_;
  ReplicaSyncCost sync_;
  MaxTree sync_tree_;  ///< the fast path's per-device replica sync (enabled sync_ only)
  /// Σ_d of the squares of each device's fw, bw, 2 × output and input sending time in µs, and Σ_h
  /// of the square of 2 × each host's reduced rows' sending time: the fast path's spread, an
  /// integer so that add and remove undo exactly (no move sequence can cycle); µs keep it far
  /// inside int64 (10 s per term on 4,096 devices: 4·10^17).
  std::int64_t fast_spread_ = 0;
  std::vector<std::array<std::int64_t, 4>> fast_terms_;
  /// Per host, twice the whole µs its devices spend sending its reduced rows across hosts.
  std::vector<std::int64_t> fast_host_terms_;
};

/** The pieces' shards of `layout` for a table of `rows` × `cols` (devices left 0). */
[[nodiscard]] std::vector<Shard> layout_shards(Layout layout, std::int64_t rows, int cols);

}  // namespace embshard::detail::joint
