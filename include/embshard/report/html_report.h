#pragma once
/**
 * @file html_report.h
 * @brief What a person looks at: one self-contained HTML file (inline SVG and CSS, a few lines
 *        of inline script for sorting; no network, readable offline, printable) of the plans of
 *        one task or of a comparison.
 *
 * A plan report (`embshard report --task T --plan P [--plan P2 …]`, `embshard plan --report`)
 * shows, for each plan:
 *   - provenance: sharder spec, cost model, judge, task id, embshard version, seed, planning time;
 *   - step time per device: stacked fw comp / fw comm / fw wait / bw comm / bw comp bars on a ms
 *     axis, a line at the step time, the straggler (the device with the largest fw_comp + bw_comp)
 *     marked;
 *   - memory per device: HBM (and UVM, when used) against the device's budget;
 *   - the plan itself: a table × device map (each cell the share of the table's bytes on the
 *     device; split tables show their pieces, rows in UVM in their own colour), and a sortable
 *     list of the tables: rows, dim, size, pooling, sharding type, devices, and each table's cost
 *     share (the sim model's cost of the whole table alone, over the sum of those costs).
 * Several plans of one task appear one after another, with a side-by-side summary first.
 *
 * A comparison report (`embshard report --compare R.csv`, `embshard compare --report`) shows the
 * summary table of `compare_markdown` (per setting, like NeuroShard's Table 1), per setting a
 * strip plot with a box of every sharder's step times over the tasks, the ratio of each sharder's
 * step to a reference sharder's on every task both planned, and valid-plan counts, planning times
 * and gaps to the lower bound.
 *
 * Every figure has a title, units and the provenance of its numbers. The `?selfcheck` query makes
 * the page append a `<pre id="selfcheck">` with the size of every SVG and every script error, for
 * the browser test (tests/python/test_report_browser.py).
 */
#include <string>
#include <vector>

#include "embshard/data/task.h"
#include "embshard/eval/compare.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan.h"

namespace embshard {

/** One plan of a task and its judge's verdict. */
struct JudgedPlan {
  Plan plan;
  EvalResult eval;
  std::string source;  ///< where the plan came from (a file name), shown in the report
};

/** The report of one or more plans of `task` (file comment); Error when `plans` is empty. */
[[nodiscard]] std::string plan_report_html(const Task& task, const std::vector<JudgedPlan>& plans);

/**
 * `compare --chart`: one SVG of task `task_id` with, for every sharder that planned it, the same
 * per-device step bars as the plan report (fw comp / fw comm / fw wait / bw comm / bw comp on a
 * ms axis, the step line, the straggler), titled with the task and the sharder (DreamShard
 * Fig. 1). Error naming the task when no sharder planned it.
 */
[[nodiscard]] std::string compare_chart_svg(const std::vector<CompareRow>& rows, const std::string& task_id);

/**
 * The report of a comparison (file comment). `reference`: the sharder (canonical or short spec)
 * the ratios are taken to; "" picks `torchrec` when compared, else the first sharder. `source`
 * names the CSV or run. Error when `rows` is empty or `reference` was not compared.
 */
[[nodiscard]] std::string compare_report_html(const std::vector<CompareRow>& rows, const std::string& reference,
                                              const std::string& source);

}  // namespace embshard
