#pragma once
/**
 * @file compare.h
 * @brief The comparison harness: every task planned by every sharder, every plan judged by one
 *        backend, and the results as CSV and a Markdown summary (the chart and the HTML report:
 *        report/html_report.h).
 *
 * Planning runs in parallel across tasks (the context's threads); each (task, sharder) gets the
 * context seed. Evaluation of ok plans runs in parallel, and serially where the judge times
 * kernels, so timings do not disturb each other. Each row also carries the cost model's lower
 * bound of the objective, so every result has its optimality gap — when the judge is that same
 * model (the judge spec is the cost spec, e.g. both `sim`); with another judge the bound is 0
 * (unknown) and the summary shows no gap.
 *
 * Settings (the columns of the summary, like NeuroShard's Table 1) group tasks by their protocol's
 * `devices` and `max_dim` parameters ("d4 m128"), or by the whole protocol spec when it has none.
 * A cell is the mean step_ms of a sharder over the setting's tasks that every compared sharder
 * planned (like with like; the header gives their count), else over its own valid plans marked
 * `*`, and "-" only when it planned none of them.
 */
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/cost/breakdown.h"
#include "embshard/eval/evaluator.h"

namespace embshard {

struct CompareOptions {
  std::vector<std::string> sharders;  ///< sharder specs
  std::string cost = "default";       ///< handed to every sharder that uses a cost model
  std::string judge = kSimJudge;      ///< the judge spec of every plan (eval/evaluator.h)
};

struct CompareRow {
  std::string task_id;
  std::string setting;  ///< see the file comment
  std::string sharder;  ///< canonical spec
  std::string status;   ///< ok | infeasible | time_limit (`to_string(ShardStatus)`); invalid: what_if.h
  std::string reason;
  double plan_ms = 0.0;
  double lower_bound_ms = 0.0;  ///< of the step objective under `cost`; 0 if the judge differs
  EvalResult eval;              ///< the judge's verdict, when ok (all zero otherwise)
  /** Whether the sharder planned it (and `eval` holds the plan's verdict). */
  [[nodiscard]] bool ok() const { return status == kOkStatus; }
  static constexpr const char* kOkStatus = "ok";  ///< to_string(ShardStatus::kOk)
};

/**
 * The sharders the main job and Python's `plan(sharder="best")` / `compare()` consider by default:
 * every registered sharder with its defaults, greedy with each of its balances, torchrec also as
 * TorchRec configures itself (`bandwidths=torchrec`), except those that only take tiny tasks
 * (exhaustive), need a trained policy (dreamshard, autoshard) or may spend a minute (recshard).
 */
[[nodiscard]] std::vector<std::string> default_sharders();

/** Whether a sharder spec is one of the papers' baselines (random, greedy). */
[[nodiscard]] bool is_baseline(const std::string& sharder_spec);

/**
 * Plans and evaluates every task with every sharder (file comment); rows task-major. `plans`, when
 * given, receives each row's plan in row order (an empty plan where the row is not "ok").
 */
[[nodiscard]] std::vector<CompareRow> run_compare(const std::vector<Task>& tasks, const CompareOptions& options,
                                                  const Context& ctx, std::vector<Plan>* plans = nullptr);

/**
 * The fastest ok row by the judge's step among `rows` that `pick` accepts (every row when `pick`
 * is empty), the first in row order on a tie; nullptr when none is ok. The main job's "best" and
 * Python's `plan(sharder="best")`.
 */
[[nodiscard]] const CompareRow* fastest_row(const std::vector<CompareRow>& rows,
                                            const std::function<bool(const std::string&)>& pick = {});

/** Reads every `*.json` task of a directory, in name order; Error naming the bad file. */
[[nodiscard]] std::vector<Task> read_task_dir(const std::string& dir);

/** `task_id,setting,sharder,status,step_ms,max_sum_ms,balance,plan_ms,lower_bound_ms,reason`. */
[[nodiscard]] std::string compare_csv(const std::vector<CompareRow>& rows);

/**
 * The rows of a CSV that `compare_csv` wrote, back (the fields the CSV holds: the breakdown and
 * lookups are not in it). Error with one line naming the file, the line and the problem for a
 * file from another version (another header), a missing or extra column, a bad number or status,
 * or a file without rows.
 */
[[nodiscard]] std::vector<CompareRow> read_compare_csv(const std::string& path);

/**
 * The summary of a comparison as text and a table, which the Markdown (`compare_markdown`) and the
 * comparison report's HTML (report/html_report.h) each render. Notes use `code` and *emphasis*;
 * cells are one line (`one_line`), unescaped.
 */
struct CompareSummary {
  std::string note;  ///< what the cells are, before the table
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string sharders_note;  ///< the sharders' full specs, after the table
};

/**
 * The summary, one row per sharder (its short spec; the full specs follow the table):
 * the per-setting cells of the file comment, the mean over its own valid plans, valid / total,
 * wins / ties / losses against the best other sharder on each task both planned (ties within
 * 0.1%), mean planning time, mean gap to the lower bound; and, when some valid plan serves
 * lookups from UVM, the mean share of lookups served from UVM (`uvm_lookup_share`, expected from
 * the tasks' statistics) over its valid plans.
 */
[[nodiscard]] CompareSummary compare_summary(const std::vector<CompareRow>& rows);

/** `compare_summary` as Markdown: the note, a blank line, the table, a blank line, the sharders. */
[[nodiscard]] std::string compare_markdown(const std::vector<CompareRow>& rows);

}  // namespace embshard
