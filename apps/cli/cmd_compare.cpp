// embshard compare --tasks DIR --sharders 'S1;S2;...' [--cost SPEC] [--backend B] --out R.csv
//                  [--summary R.md] [--chart R.svg [--chart-task ID]]
#include <iostream>

#include "commands.h"
#include "embshard/core/file_io.h"
#include "embshard/eval/compare.h"

namespace embshard::cli {
namespace {

std::vector<std::string> split_sharders(const std::string& text) {
  std::vector<std::string> specs;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(';', begin), text.size());
    if (end > begin) specs.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return specs;
}

}  // namespace

int run_compare(Args& args, const Context& ctx) {
  const std::string dir = args.require("tasks");
  CompareOptions options;
  options.sharders = split_sharders(args.require("sharders"));
  options.cost = args.get_or("cost", "default");
  options.eval.backend = args.get_or("backend", "sim");
  options.eval.batch_size = args.get_int("batch", 0);
  options.eval.measure = measure_options(args, options.eval.measure);
  const std::string out = args.require("out");
  const auto summary = args.get("summary");
  const auto chart = args.get("chart");
  const auto chart_task = args.get("chart-task");
  args.finish();
  std::vector<NamedPath> inputs = spec_inputs("--cost", options.cost);
  for (const std::string& s : options.sharders) {
    for (const NamedPath& p : spec_inputs("--sharders", s)) inputs.push_back(p);
  }
  check_paths(inputs, {{"--tasks", dir}},
              {{"--out", out}, {"--summary", summary.value_or("")}, {"--chart", chart.value_or("")}});
  const std::vector<Task> tasks = read_task_dir(dir);
  const std::vector<CompareRow> rows = run_compare(tasks, options, ctx);
  const std::string markdown = compare_markdown(rows);
  OutputSet outputs;  // the CSV, summary and chart are replaced together or not at all
  outputs.add(out, compare_csv(rows));
  if (summary) outputs.add(*summary, markdown);
  if (chart) outputs.add(*chart, breakdown_svg(rows, chart_task.value_or(tasks.front().id)));
  std::cout << markdown;
  outputs.commit();
  return 0;
}

}  // namespace embshard::cli
