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
  const std::vector<Task> tasks = read_task_dir(dir);
  const std::vector<CompareRow> rows = run_compare(tasks, options, ctx);
  write_file_atomic(out, compare_csv(rows));
  const std::string markdown = compare_markdown(rows);
  if (summary) write_file_atomic(*summary, markdown);
  if (chart) write_file_atomic(*chart, breakdown_svg(rows, chart_task.value_or(tasks.front().id)));
  std::cout << markdown;
  return 0;
}

}  // namespace embshard::cli
