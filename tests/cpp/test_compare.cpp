// Tests of the comparison harness: rows, CSV, the Markdown summary and the SVG chart, and the CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "embshard/core/file_io.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/compare.h"
#include "embshard/eval/task_gen.h"
#include "embshard/report/html_report.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

std::vector<Task> neuroshard_tasks(int count, int max_dim) {
  const auto gen = make_task_generator("neuroshard:devices=4,max_dim=" + std::to_string(max_dim));
  const TableSource source = TableSource::from_pool(0, gen->batch_size());
  std::vector<Task> tasks;
  for (int i = 0; i < count; ++i) tasks.push_back(gen->generate(source, 0, i));
  return tasks;
}

TEST(Compare, PlansAndJudgesEveryTaskWithEverySharder) {
  std::vector<Task> tasks = neuroshard_tasks(3, 16);
  const std::vector<Task> big = neuroshard_tasks(1, 128);
  tasks.push_back(big.front());
  tasks.back().topology.devices.resize(1);  // one device of 4 GiB cannot hold it: infeasible
  tasks.back().id = "too-small";
  CompareOptions options;
  options.sharders = {"greedy:balance=lookup", "random:attempts=20"};
  Context ctx;
  ctx.verbosity = LogLevel::kQuiet;
  const std::vector<CompareRow> rows = run_compare(tasks, options, ctx);
  ASSERT_EQ(rows.size(), 8u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rows[i].status, "ok") << rows[i].reason;
    EXPECT_GE(rows[i].eval.step_ms + 1e-9, rows[i].lower_bound_ms);
    EXPECT_GE(rows[i].eval.step_ms, rows[i].eval.max_sum_ms);
    EXPECT_EQ(rows[i].eval.breakdown.devices.size(), 4u);
  }
  EXPECT_EQ(rows[0].sharder, "greedy:balance=lookup,on_full=infeasible,pooling=float");
  EXPECT_EQ(rows[6].status, "infeasible");
  EXPECT_NE(rows[6].reason.find("fits on no device"), std::string::npos) << rows[6].reason;

  const std::string csv = compare_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "task_id,setting,sharder,status,step_ms,max_sum_ms,balance,plan_ms,lower_bound_ms,reason");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  const std::string md = compare_markdown(rows);
  EXPECT_NE(md.find("neuroshard d4 m16"), std::string::npos) << md;
  EXPECT_NE(md.find("| - |"), std::string::npos) << md;  // the infeasible setting
  EXPECT_NE(md.find("3/4"), std::string::npos) << md;
  const std::string svg = compare_chart_svg(rows, tasks[0].id);
  std::size_t rects = 0;
  for (std::size_t p = svg.find("<rect"); p != std::string::npos; p = svg.find("<rect", p + 1)) ++rects;
  EXPECT_EQ(rects, 2u * (4u * 6u + 1u + 6u));  // 2 sharders × (4 devices × 6 parts, the straggler, the legend)
  EXPECT_NE(svg.find("task " + tasks[0].id + ", greedy: step"), std::string::npos) << svg.substr(0, 400);
  EXPECT_NE(svg.find("task " + tasks[0].id + ", random:attempts=20: step"), std::string::npos);
  EXPECT_NE(svg.find("fw wait"), std::string::npos);
  EXPECT_NE(svg.find("ms per step"), std::string::npos);  // the axis
  EXPECT_NE(error_of([&] { (void)compare_chart_svg(rows, "too-small"); }).find("no sharder produced a plan"),
            std::string::npos);
  options.judge = "measured:impl=cpu,batch=256,warmup=0,repeats=1,flush=false,trim=0";  // another judge: no bound
  options.sharders = {"greedy:balance=lookup"};
  const std::vector<Task> one(tasks.begin(), tasks.begin() + 1);
  const std::vector<CompareRow> measured = run_compare(one, options, ctx);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0].lower_bound_ms, 0.0);
  EXPECT_EQ(measured[0].eval.breakdown.compute_source, CostSource::kMeasured);
  EXPECT_NE(compare_markdown(measured).find("| - |\n"), std::string::npos) << compare_markdown(measured);
  options.sharders = {"greedy:balance=sideways"};
  EXPECT_NE(error_of([&] { (void)run_compare(tasks, options, ctx); }).find("balance"), std::string::npos);
}

CompareRow summary_row(const std::string& task, const std::string& setting, const std::string& sharder,
                       double step_ms) {
  CompareRow r;
  r.task_id = task;
  r.setting = setting;
  r.sharder = sharder;
  r.status = step_ms > 0 ? "ok" : "infeasible";
  r.eval.step_ms = step_ms;
  r.plan_ms = 1.0;
  return r;
}

TEST(Compare, AHandWrittenTasksFreeTextProtocolIsItsSetting) {
  // `plan`, `check` and `eval` accept a task whose protocol is free text; compare did not (it parsed
  // it as a spec). Its rows carry the text, and the summary's table keeps one line per row and its
  // columns whatever the text holds.
  std::vector<Task> tasks = neuroshard_tasks(2, 16);
  tasks[0].protocol = "my hand-made | task\nfrom prod";
  CompareOptions options;
  options.sharders = {"greedy:balance=lookup"};
  Context ctx;
  ctx.verbosity = LogLevel::kQuiet;
  const std::vector<CompareRow> rows = run_compare(tasks, options, ctx);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].status, "ok") << rows[0].reason;
  EXPECT_EQ(rows[0].setting, tasks[0].protocol);
  EXPECT_EQ(rows[1].setting, "neuroshard d4 m16");
  const std::string md = compare_markdown(rows);
  std::istringstream lines(md.substr(md.find("\n| sharder") + 1));
  std::set<long> bars;
  for (std::string line; std::getline(lines, line) && !line.empty();)
    bars.insert(std::count(line.begin(), line.end(), '|'));
  EXPECT_EQ(bars.size(), 1u) << md;
  EXPECT_NE(md.find("my hand-made \u00a6 task\\nfrom prod"), std::string::npos) << md;
}

TEST(Compare, SummarySaysSomethingWhenSomeTasksFail) {
  // Setting s1: greedy fails t2; torchrec plans all. Setting s2: nobody plans both tasks alike.
  const std::vector<CompareRow> rows{
      summary_row("t0", "s1", "greedy:balance=lookup", 10), summary_row("t0", "s1", "torchrec", 8),
      summary_row("t1", "s1", "greedy:balance=lookup", 6),  summary_row("t1", "s1", "torchrec", 6.001),
      summary_row("t2", "s1", "greedy:balance=lookup", 0),  summary_row("t2", "s1", "torchrec", 100),
      summary_row("t3", "s2", "greedy:balance=lookup", 4),  summary_row("t3", "s2", "torchrec", 0),
      summary_row("t4", "s2", "greedy:balance=lookup", 0),  summary_row("t4", "s2", "torchrec", 0)};
  const std::string md = compare_markdown(rows);
  EXPECT_NE(md.find("| s1 (n=2 of 3) | s2 (n=0 of 2) |"), std::string::npos) << md;
  // greedy: s1 over t0, t1 = 8; s2 only its own plan (*); own mean (10+6+4)/3; 2 ties-or-losses.
  EXPECT_NE(md.find("| greedy | 8.00 | 4.00* | 6.67 | 3/5 | 0/1/1 |"), std::string::npos) << md;
  // torchrec: s1 over t0, t1 = 7.0005 → 7.00; nothing in s2; it beat greedy on t0, tied on t1.
  EXPECT_NE(md.find("| torchrec | 7.00 | - | 38.00 | 3/5 | 1/1/0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("`greedy:balance=lookup`"), std::string::npos) << md;  // the full spec too
}

TEST(Compare, TheFastestRowIsTheFirstOkRowOfTheLeastStep) {
  const auto row = [](const std::string& sharder, const char* status, double step) {
    CompareRow r;
    r.sharder = sharder;
    r.status = status;
    r.eval.step_ms = step;
    return r;
  };
  const std::vector<CompareRow> rows{row("torchrec", "ok", 3.0), row("joint", "infeasible", 0.0),
                                     row("torchrec:bandwidths=torchrec", "ok", 2.0), row("greedy", "ok", 2.0)};
  EXPECT_EQ(fastest_row(rows), &rows[2]) << "a failed row's zero step is not a step; ties keep row order";
  EXPECT_EQ(fastest_row(rows, is_baseline), &rows[3]);
  EXPECT_EQ(fastest_row(rows, [](const std::string& s) { return s == "joint"; }), nullptr);
  EXPECT_EQ(fastest_row({}), nullptr);
}

TEST(Compare, DefaultShardersCoverEveryBaseline) {
  const auto specs = default_sharders();
  EXPECT_NE(std::find(specs.begin(), specs.end(), "greedy:balance=size_and_lookup"), specs.end());
  EXPECT_NE(std::find(specs.begin(), specs.end(), "random"), specs.end());
  EXPECT_NE(std::find(specs.begin(), specs.end(), "torchrec:bandwidths=torchrec"), specs.end());
  EXPECT_EQ(std::find(specs.begin(), specs.end(), "exhaustive"), specs.end());
  EXPECT_TRUE(is_baseline("greedy:balance=dim"));
  EXPECT_FALSE(is_baseline("exhaustive"));
}

TEST(Compare, CliWritesCsvSummaryAndChart) {
  namespace fs = std::filesystem;
  const fs::path dir = test_util::temp_file("embshard_compare", "cli");
  fs::remove_all(dir);
  const std::string cli = EMBSHARD_CLI_PATH;
  ASSERT_EQ(test_util::run_command(cli +
                                   " task gen --quiet --protocol neuroshard --devices 4 --max-dim 16 "
                                   "--count 2 --seed 0 --out " +
                                   (dir / "tasks").string())
                .status,
            0);
  const auto r = test_util::run_command(
      cli + " compare --quiet --tasks " + (dir / "tasks").string() + " --sharders 'greedy;greedy:balance=dim' --out " +
      (dir / "r.csv").string() + " --summary " + (dir / "r.md").string() + " --chart " + (dir / "r.svg").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(read_file((dir / "r.md").string()).find("greedy:balance=dim"), std::string::npos);
  EXPECT_NE(read_file((dir / "r.svg").string()).find("<svg"), std::string::npos);
  const std::string csv = read_file((dir / "r.csv").string());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  // A log that is not a terminal gets the one final progress line and no live line.
  const auto logged = test_util::run_command(cli + " compare --tasks " + (dir / "tasks").string() +
                                             " --sharders greedy --out " + (dir / "r2.csv").string());
  ASSERT_EQ(logged.status, 0) << logged.out;
  EXPECT_EQ(logged.out.find('\r'), std::string::npos) << logged.out;
  EXPECT_NE(logged.out.find("compare: plans planned and judged: 4 done in "), std::string::npos) << logged.out;
  const auto bad = test_util::run_command(cli + " compare --tasks " + (dir / "nowhere").string() +
                                          " --sharders greedy --out " + (dir / "x.csv").string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("nowhere: no such directory"), std::string::npos) << bad.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace embshard
