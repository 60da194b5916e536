// The HTML reports (report/html_report.h), the comparison CSV reader they start from, and the
// plotting helpers. The browser test (tests/python/test_report_browser.py) renders them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "embshard/core/file_io.h"
#include "embshard/core/markup.h"
#include "embshard/eval/compare.h"
#include "embshard/plan/plan_io.h"
#include "embshard/report/fit_report.h"
#include "embshard/report/html_report.h"
#include "embshard/shard/sharder.h"
#include "report/svg_plot.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::quiet_context;

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/** The specs of a `;`-separated list. */
std::vector<std::string> split_specs(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string spec; std::getline(in, spec, ';');)
    if (!spec.empty()) out.push_back(spec);
  return out;
}

TEST(Markup, EscapesEveryCharacterThatBreaksMarkup) {
  EXPECT_EQ(xml_escape("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(xml_escape("plain /path/x.json"), "plain /path/x.json");
  // Control characters XML cannot hold (even as references) become U+FFFD; tab and newline stay.
  EXPECT_EQ(xml_escape(std::string("t\x01"
                                   "a\0b\x1b[31m\x7f\tc\n",
                                   14)),
            "t\uFFFDa\uFFFDb\uFFFD[31m\uFFFD\tc\n");
  EXPECT_EQ(xml_escape("ü→"), "ü→");
}

TEST(Markup, OneLineKeepsAMessageOneLineAndTheTerminalAsItWas) {
  EXPECT_EQ(one_line("table 'a\nb'\r\t"), "table 'a\\nb'\\r\\t");
  EXPECT_EQ(one_line(std::string("\x1b[2J\0\x7f", 6)), "\\x1b[2J\\x00\\x7f");
  EXPECT_EQ(one_line("plain 'ü' /path"), "plain 'ü' /path");
}

TEST(ReportPlot, AxesCoverTheirRangeWithRoundTicks) {
  for (const auto& [lo, hi] :
       std::vector<std::pair<double, double>>{{0, 7.3}, {0, 0.042}, {0.8, 2.3}, {0, 1234}, {5, 5}}) {
    const report::Axis a = report::nice_axis(lo, hi);
    EXPECT_LE(a.min, lo);
    EXPECT_GE(a.max, hi);
    ASSERT_GE(a.ticks.size(), 2u) << lo << " " << hi;
    EXPECT_LE(a.ticks.size(), 11u) << lo << " " << hi;
    EXPECT_DOUBLE_EQ(a.ticks.front(), a.min);
    EXPECT_NEAR(a.ticks.back(), a.max, 1e-9 * std::max(1.0, a.max));
    EXPECT_EQ(report::y_of(a, a.min, 10, 110), 110);
    EXPECT_EQ(report::y_of(a, a.max, 10, 110), 10);
  }
  const report::Quartiles q = report::quartiles({5, 1, 3, 2, 4});
  EXPECT_DOUBLE_EQ(q.q1, 2);
  EXPECT_DOUBLE_EQ(q.median, 3);
  EXPECT_DOUBLE_EQ(q.q3, 4);
}

TEST(ReportPlot, LogAxesCoverTheirRangeByDecades) {
  const report::Axis a = report::log_axis(0.013, 4.2);
  EXPECT_TRUE(a.log);
  EXPECT_DOUBLE_EQ(a.min, 0.01);
  EXPECT_DOUBLE_EQ(a.max, 10.0);
  EXPECT_EQ(a.ticks.size(), 10u);  // 1, 2, 5 in each of three decades, then 10
  EXPECT_DOUBLE_EQ(report::x_of(a, 0.01, 0, 300), 0);
  EXPECT_DOUBLE_EQ(report::x_of(a, 10, 0, 300), 300);
  EXPECT_NEAR(report::x_of(a, 0.1, 0, 300), 100, 1e-9);  // one decade of three
  EXPECT_NEAR(report::y_of(a, 1.0, 0, 300), 100, 1e-9);
  const report::Axis wide = report::log_axis(2e-4, 3e3);
  EXPECT_EQ(wide.ticks.size(), 9u);  // more than three decades: 10^-4 … 10^4 only
}

TEST(FitReport, EveryPointIsDrawnWhereItWasMeasuredAndPredicted) {
  const FitPanel panel{"forward pass", {{1.0, 1.0}, {0.1, 0.2}, {10.0, 5.0}}, {{"median error", "50%"}}};
  const std::string svg = fit_panel_svg(panel);
  EXPECT_EQ(count_of(svg, "<circle"), 3u);
  // The axis runs 0.1 … 10 ms over 300 px from x = 64 (y from 334 up to 34): 1 ms is in the middle.
  EXPECT_NE(svg.find("cx='214.0' cy='184.0'"), std::string::npos) << svg;
  EXPECT_NE(svg.find("measured 0.1000 ms, predicted 0.2000 ms"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<line"), 2 * 7u + 3 + 3);  // 7 ticks (0.1 … 10) per axis, 3 axis lines, 3 diagonals
  FitReport r{"fit <test>", {{"samples", "s.jsonl"}}, {panel}, "coefficients", {{"a", "b"}, {"1", "2"}}};
  const std::string html = fit_report_html(r);
  EXPECT_NE(html.find("<h1>fit &lt;test&gt;</h1>"), std::string::npos);
  EXPECT_NE(html.find("<td>50%</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>held-out samples</th><td>3</td>"), std::string::npos);
  r.panels.clear();
  EXPECT_NE(error_of([&] { (void)fit_report_html(r); }).find("has no model to show"), std::string::npos);
}

TEST(FitReport, TrainedModelsShowTheirScattersAndEveryBaseline) {
  TrainingProvenance t;
  t.samples_path = "c.jsonl";
  t.samples_sha256 = "0123456789abcdef";
  t.num_samples = 400;
  t.epochs = 50;
  t.best_epoch = 41;
  t.accuracy["model"] = {0.01, 0.061, 0.93, 40};
  t.accuracy["sum_of_singles"] = {0.2, 0.35, 0.1, 40};
  TrainingProvenance comm = t;
  comm.samples_path = "m.jsonl";
  comm.accuracy = {{"model", {0.5, 0.2, 0.8, 160}}, {"link", {0.7, 0.3, 0.6, 160}}};
  const std::vector<TrainedModelFit> models = {{"compute", "compute fw+bw, held out", t, {{1.0, 1.1}, {2.0, 1.9}}},
                                               {"fw_comm", "forward all-to-all", comm, {{0.5, 0.4}}}};
  const FitReport r = neural_training_report(models, "w.json");
  ASSERT_EQ(r.panels.size(), 2u);
  EXPECT_EQ(r.panels[0].points.size(), 2u);
  EXPECT_EQ(r.table.size(), 1u + 2 + 2);  // the header, then each model beside each baseline
  const std::string html = fit_report_html(r);
  EXPECT_EQ(count_of(html, "<circle"), 3u);
  for (const char* text : {"<td>sum_of_singles</td>", "<td>link</td>", "<td>6.1%</td>", "<td>0.930</td>",
                           "c.jsonl (400 samples, SHA-256 0123456789ab…)", "<td>50 (41)</td>"}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  EXPECT_NE(error_of([] { (void)neural_training_report({}, "w.json"); }).find("no trained model"), std::string::npos);
}

TEST(PlanReport, ShowsEveryPlanWithItsFiguresStragglerAndProvenance) {
  static constexpr int kDims[] = {16, 32, 64};
  Task task = test_util::pool_task(8, "v100:nodes=1,gpus_per_node=4", 5, kDims);
  task.workload.tables[0].name = "t<0>&co";  // must be escaped everywhere
  std::vector<JudgedPlan> plans;
  for (const char* sharder : {"greedy:balance=lookup", "greedy:balance=dim"}) {
    ShardResult r = plan_task(sharder, task, nullptr, quiet_context());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    const EvalResult e = evaluate_plan(task, r.plan, kSimJudge, quiet_context());
    plans.push_back({r.plan, e, std::string(sharder) + ".json"});
  }
  const std::string html = plan_report_html(task, plans);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count_of(html, "<svg"), 3u * plans.size());  // step bars, memory, placement map
  EXPECT_EQ(count_of(html, "<h2 id='plan"), plans.size());
  EXPECT_NE(html.find("The plans side by side"), std::string::npos);
  EXPECT_EQ(html.find("t<0>"), std::string::npos);
  EXPECT_NE(html.find("t&lt;0&gt;&amp;co"), std::string::npos);
  EXPECT_NE(html.find("greedy:balance=lookup,on_full=infeasible,pooling=float"), std::string::npos);  // provenance
  EXPECT_NE(html.find("greedy:balance=dim.json"), std::string::npos);                                 // plan file
  EXPECT_EQ(html.find(" src="), std::string::npos);  // nothing from the network
  EXPECT_EQ(html.find("href='http"), std::string::npos);
  // The straggler mark sits on the device with the largest fw_comp + bw_comp.
  const auto& devices = plans[0].eval.breakdown.devices;
  std::size_t slowest = 0;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].fw_comp_ms + devices[d].bw_comp_ms > devices[slowest].fw_comp_ms + devices[slowest].bw_comp_ms) {
      slowest = d;
    }
  }
  const std::size_t mark = html.find("straggler: the largest");
  ASSERT_NE(mark, std::string::npos);
  const std::size_t last_bar = html.rfind("device ", mark);
  EXPECT_EQ(html.substr(last_bar, 9), "device " + std::to_string(slowest) + ":");
  // Every table appears in the map and the list; each list row has its cost share.
  for (const TableSpec& t : task.workload.tables) EXPECT_GE(count_of(html, xml_escape(t.name)), 2u) << t.name;
  EXPECT_NE(error_of([&] { (void)plan_report_html(task, {}); }).find("no plan"), std::string::npos);
}

std::vector<CompareRow> small_comparison() {
  std::vector<Task> tasks;
  static constexpr int kDims[] = {8, 16, 32};
  for (std::uint64_t seed = 0; seed < 3; ++seed)
    tasks.push_back(test_util::pool_task(6, "v100:nodes=1,gpus_per_node=2", seed, kDims));
  CompareOptions options;
  options.sharders = {"greedy:balance=lookup", "greedy:balance=size", "random:attempts=5"};
  return run_compare(tasks, options, quiet_context());
}

TEST(CompareReport, CsvReadsBackAndTheReportShowsEverySettingAndSharder) {
  const std::vector<CompareRow> rows = small_comparison();
  const std::string path = test_util::temp_file("report", "results.csv");
  write_file_atomic(path, compare_csv(rows));
  const std::vector<CompareRow> back = read_compare_csv(path);
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].task_id, rows[i].task_id);
    EXPECT_EQ(back[i].sharder, rows[i].sharder);
    EXPECT_EQ(back[i].status, rows[i].status);
    EXPECT_NEAR(back[i].eval.step_ms, rows[i].eval.step_ms, 5e-4);
    EXPECT_NEAR(back[i].lower_bound_ms, rows[i].lower_bound_ms, 5e-4);
  }
  const std::string html = compare_report_html(back, "greedy:balance=size", path);
  EXPECT_EQ(count_of(html, "<svg"), 2u);  // one setting: steps and ratios
  EXPECT_NE(html.find("Step relative to greedy:balance=size"), std::string::npos);
  EXPECT_NE(html.find("<th>W/T/L</th>"), std::string::npos);
  for (const char* s : {"greedy", "greedy:balance=size", "random:attempts=5"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
  EXPECT_NE(error_of([&] { (void)compare_report_html(back, "torchrec", path); }).find("was not compared"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)compare_report_html({}, "", path); }).find("empty comparison"), std::string::npos);
}

TEST(CompareReport, TheSummaryIsOneTableTheMarkdownAndTheHtmlEachRender) {
  // A setting with a pipe and a tab: the Markdown escapes them for its table syntax, the HTML
  // shows the setting as it is (nothing is parsed back from Markdown), both from compare_summary.
  std::vector<CompareRow> rows = small_comparison();
  for (CompareRow& r : rows) r.setting = "a|b\tc";
  const CompareSummary summary = compare_summary(rows);
  ASSERT_EQ(summary.rows.size(), 3u);
  EXPECT_EQ(summary.header.at(1).rfind("a|b\\tc (n=", 0), 0u) << summary.header.at(1);
  const std::string md = compare_markdown(rows);
  EXPECT_NE(md.find("| a\u00a6b\\tc (n="), std::string::npos) << md;
  const std::string html = compare_report_html(rows, "", "x.csv");
  EXPECT_NE(html.find("<th>a|b\\tc (n="), std::string::npos);
  for (const auto& row : summary.rows) EXPECT_NE(html.find("<td>" + row.front() + "</td>"), std::string::npos);
}

TEST(CompareReport, BadCsvIsOneLineNamingTheFileAndLine) {
  const std::string path = test_util::temp_file("report", "bad.csv");
  const std::string header =
      "task_id,setting,sharder,status,step_ms,max_sum_ms,balance,plan_ms,lower_bound_ms,reason\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "empty file"},
      {"task_id,setting,sharder,status,step_ms\n", "not a comparison CSV of this version"},
      {header, "no rows"},
      {header + "t0,s,greedy,ok,1.0,1.0,1.0,0.1\n", "line 2: 8 columns, expected 10"},
      {header + "t0,s,greedy,ok,fast,1.0,1.0,0.1,0,\n", "line 2: column step_ms"},
      {header + "t0,s,greedy,ok,1,1,1,0.1,0,\nt1,s,greedy,maybe,1,1,1,0.1,0,\n", "line 3: column status"},
      {header + "t0,s,\"greedy,ok,1,1,1,0.1,0,\n", "quoted field is not closed"}};
  for (const auto& [text, want] : cases) {
    std::ofstream(path, std::ios::trunc) << text;
    const std::string error = error_of([&] { (void)read_compare_csv(path); });
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find(want), std::string::npos) << "want '" << want << "' in: " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(ReportCli, WritesReportsAndRefusesAPlanOfAnotherTaskWithoutWritingAnything) {
  const std::string cli = EMBSHARD_CLI_PATH;
  const std::string dir = test_util::temp_file("report", "cli");
  std::filesystem::remove_all(dir);  // what an earlier run with the same process id left
  const auto gen = test_util::generate_cli_tasks(dir, 4, 16, 2, 3);
  ASSERT_EQ(gen.status, 0) << gen.out;
  const std::string t0 = dir + "/tasks/000.json", t1 = dir + "/tasks/001.json", plan = dir + "/p.json";
  const auto planned = test_util::run_command(cli + " plan --quiet --task " + t0 + " --sharder greedy --out " + plan +
                                              " --report " + dir + "/plan.html");
  ASSERT_EQ(planned.status, 0) << planned.out;
  EXPECT_NE(read_file(dir + "/plan.html").find("<svg"), std::string::npos);
  const auto other =
      test_util::run_command(cli + " report --task " + t1 + " --plan " + plan + " --out " + dir + "/x.html");
  EXPECT_EQ(other.status, 1) << other.out;
  EXPECT_NE(other.out.find(plan + ": the plan was made for task"), std::string::npos) << other.out;
  EXPECT_FALSE(std::ifstream(dir + "/x.html").good());
  const auto compared =
      test_util::run_command(cli + " compare --quiet --tasks " + dir + "/tasks --sharders 'greedy;random' --out " +
                             dir + "/r.csv --report " + dir + "/c.html");
  ASSERT_EQ(compared.status, 0) << compared.out;
  const auto again =
      test_util::run_command(cli + " report --compare " + dir + "/r.csv --reference random --out " + dir + "/c2.html");
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_NE(read_file(dir + "/c2.html").find("Step relative to random"), std::string::npos);
}

TEST(ReportCli, TheMainJobReportsEveryPlanItFound) {
  const std::string dir = test_util::temp_file("report", "main");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto r = test_util::run_command(std::string(EMBSHARD_CLI_PATH) + " --quiet --report " + dir + "/main.html");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::size_t planned = count_of(r.out, "%  (planned in ");  // one line per plan found
  ASSERT_GE(planned, 5u) << r.out;
  const std::string html = read_file(dir + "/main.html");
  EXPECT_EQ(count_of(html, "<title>Step time per device, "), planned);
  for (const std::string& spec : default_sharders()) {
    EXPECT_NE(html.find(xml_escape(short_sharder_spec(spec))), std::string::npos) << spec;
  }
}

/** The sharders the summary table of a committed plan report names (its `#planN` links). */
std::set<std::string> report_sharders(const std::string& html) {
  std::set<std::string> names;
  for (std::size_t at = html.find("<td><a href='#plan"); at != std::string::npos;
       at = html.find("<td><a href='#plan", at + 1)) {
    const std::size_t from = html.find('>', at + 4) + 1;
    names.insert(html.substr(from, html.find('<', from) - from));
  }
  return names;
}

TEST(Reports, TheCommittedReportsShowTodaysSharders) {
  // docs/reports (bench/show_reports.sh) go stale when the sharders change: the main job's page
  // must show every default sharder, joint included, and the comparison the script's sharders.
  const std::string docs = std::string(EMBSHARD_SOURCE_DIR_FOR_TESTS) + "/docs/reports/";
  std::set<std::string> expected;
  for (const std::string& spec : default_sharders()) expected.insert(xml_escape(short_sharder_spec(spec)));
  const std::set<std::string> shown = report_sharders(read_file(docs + "main-job.html"));
  for (const std::string& name : expected)
    EXPECT_TRUE(shown.count(name)) << name << " is missing: run bench/show_reports.sh";
  EXPECT_TRUE(shown.count("joint")) << "the default planner is missing: run bench/show_reports.sh";
  // The comparison: the sharders the script names, no more, no fewer.
  const std::string script = read_file(std::string(EMBSHARD_SOURCE_DIR_FOR_TESTS) + "/bench/show_reports.sh");
  const std::size_t at = script.find("\nsharders=\"") + 11;
  std::set<std::string> named, compared;
  for (const std::string& spec : split_specs(script.substr(at, script.find('"', at) - at)))
    named.insert(canonical_sharder_spec(spec));
  for (const CompareRow& r : read_compare_csv(docs + "compare-100.csv")) compared.insert(r.sharder);
  EXPECT_EQ(compared, named) << "run bench/show_reports.sh";
  EXPECT_TRUE(named.count(canonical_sharder_spec("joint")));
}

TEST(ReportCli, CalibrateWritesItsFitAsAReportAndATableForPeople) {
  const std::string cli = EMBSHARD_CLI_PATH;
  const std::string dir = test_util::temp_file("report", "calibrate");
  std::filesystem::remove_all(dir);  // profile compute appends to a sample file it finds
  std::filesystem::create_directories(dir);
  const std::string samples = dir + "/s.jsonl";
  const auto profiled =
      test_util::run_command(cli +
                             " profile compute --quiet --samples 12 --batch 64 --repeats 1 --warmup 0 "
                             "--max-tables 3 --max-bytes 100000000 --out " +
                             samples);
  ASSERT_EQ(profiled.status, 0) << profiled.out;
  const auto r = test_util::run_command(cli + " profile calibrate --quiet --samples " + samples +
                                        " --test-every 10 --out " + dir + "/c.json --report " + dir + "/fit.html");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("forward   held out    2"), std::string::npos) << r.out;  // samples 0 and 10
  EXPECT_EQ(r.out.find('{'), std::string::npos) << r.out;                        // no raw JSON
  const std::string html = read_file(dir + "/fit.html");
  EXPECT_EQ(count_of(html, "<circle"), 4u);  // 2 held-out samples × fw, bw
  EXPECT_NE(html.find(samples), std::string::npos);
  EXPECT_NE(read_file(dir + "/c.json").find("test_relative_error"), std::string::npos);
  const auto same = test_util::run_command(cli + " profile calibrate --samples " + samples + " --out " + dir +
                                           "/same.html --report " + dir + "/same.html");
  EXPECT_EQ(same.status, 1) << same.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/same.html"));
}

}  // namespace
}  // namespace embshard
