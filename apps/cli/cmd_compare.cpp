// embshard compare --tasks DIR --sharders 'S1;S2;...' [--cost SPEC] [--backend B] --out R.csv
//                  [--summary R.md] [--chart R.svg [--chart-task ID]] [--report R.html [--reference S]]
#include <iostream>

#include "commands.h"
#include "embshard/core/file_io.h"
#include "embshard/eval/compare.h"
#include "embshard/report/html_report.h"

namespace embshard::cli {

int run_compare(Args& args, const Context& ctx) {
  const std::string dir = args.require("tasks");
  CompareOptions options;
  options.sharders = split_list(args.require("sharders"));
  options.cost = args.value("cost");
  options.judge = judge_option(args);
  const std::string out = args.require("out");
  const auto summary = args.get("summary");
  const auto chart = args.get("chart");
  const auto chart_task = args.get("chart-task");
  const auto report = args.get("report");
  const std::string reference = args.get_or("reference", "");
  args.finish();
  std::vector<NamedPath> inputs = spec_inputs("--cost", options.cost);
  for (const std::string& s : options.sharders) {
    for (const NamedPath& p : spec_inputs("--sharders", s)) inputs.push_back(p);
  }
  check_paths(inputs, {{"--tasks", dir}},
              {{"--out", out},
               {"--summary", summary.value_or("")},
               {"--chart", chart.value_or("")},
               {"--report", report.value_or("")}});
  const std::vector<Task> tasks = read_task_dir(dir);
  const std::vector<CompareRow> rows = run_compare(tasks, options, ctx);
  const std::string markdown = compare_markdown(rows);
  OutputSet outputs;  // the CSV, summary and chart are replaced together or not at all
  outputs.add(out, compare_csv(rows));
  if (summary) outputs.add(*summary, markdown);
  if (chart) outputs.add(*chart, compare_chart_svg(rows, chart_task.value_or(tasks.front().id)));
  if (report) outputs.add(*report, compare_report_html(rows, reference, dir));
  std::cout << markdown;
  outputs.commit();
  return 0;
}

}  // namespace embshard::cli
