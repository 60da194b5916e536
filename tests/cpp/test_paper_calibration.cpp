// The sim judge fitted to published figures (eval/paper_calibration.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "embshard/core/file_io.h"
#include "embshard/eval/paper_calibration.h"
#include "test_util.h"

namespace embshard {
namespace {

using Json = nlohmann::json;

Json figure(const std::string& id, const std::string& protocol, const std::string& sharder, double ms) {
  return {{"id", id},           {"kind", "protocol_mean"}, {"protocol", protocol}, {"sharder", sharder},
          {"published_ms", ms}, {"role", "fit"},           {"source", "test"}};
}

Json a2a_figure(const std::string& id, std::vector<int> dims, double ms) {
  return {{"id", id},           {"kind", "all_to_all"}, {"batch_size", 65536}, {"dim_sums", dims},
          {"published_ms", ms}, {"role", "fit"},        {"source", "test"}};
}

/** Twelve figures over three protocol settings, four heuristics, and two all-to-alls. */
Json figures_doc() {
  Json figures = Json::array();
  int k = 0;
  for (const char* protocol :
       {"neuroshard:devices=4,max_dim=4", "neuroshard:devices=4,max_dim=32", "neuroshard:devices=8,max_dim=16"}) {
    for (const char* sharder : {"greedy:balance=lookup", "greedy:balance=dim", "greedy:balance=size", "random"}) {
      figures.push_back(figure("f" + std::to_string(k), protocol, sharder, 21.0 + k));
      ++k;
    }
  }
  figures.push_back(a2a_figure("a0", {256, 256, 256, 256}, 11.0));
  figures.push_back(a2a_figure("a1", {64, 64, 64, 832}, 17.0));
  return {{"preset", "2080ti"},
          {"source", "test"},
          {"features", {"calls", "tables", "lookups", "miss_bytes", "output_bytes"}},
          {"backward_to_forward", {{"ratio", 4.0}, {"source", "test"}}},
          {"figures", figures}};
}

std::string write_doc(const Json& doc, const std::string& name) {
  const std::string path = test_util::temp_file("paper-fit", name);
  write_file_atomic(path, doc.dump());
  return path;
}

TEST(PaperCalibration, FiguresTheModelCanProduceAreFittedExactly) {
  // Fit once, then ask for exactly what that fit judged: a correct fit reproduces every figure.
  const Context ctx = test_util::quiet_context();
  const PaperFit first = fit_to_papers(read_paper_figures(write_doc(figures_doc(), "a.json")), 3, 7, ctx);
  Json doc = figures_doc();
  for (std::size_t k = 0; k < first.rows.size(); ++k) doc["figures"][k]["published_ms"] = first.rows[k].judged_ms;
  const PaperFit second = fit_to_papers(read_paper_figures(write_doc(doc, "b.json")), 3, 7, ctx);
  for (const PaperFit::Row& row : second.rows) {
    EXPECT_NEAR(row.judged_ms / row.figure.published_ms, 1.0, 1e-4) << row.figure.id;
    EXPECT_GE(row.tasks, 1) << row.figure.id;  // random may overfill a device on some task
    EXPECT_LE(row.tasks, row.figure.kind == "all_to_all" ? 1 : 3) << row.figure.id;
  }
  EXPECT_GT(second.a2a_gbps, 0.0);
  EXPECT_TRUE(second.hardware.calibrated);
  const std::string md = paper_fit_markdown(second);
  EXPECT_NE(md.find("| f0 | test | fit |"), std::string::npos) << md;
}

TEST(PaperCalibration, TheCommittedFiguresFileReadsBack) {
  const PaperFigures f =
      read_paper_figures(std::string(EMBSHARD_SOURCE_DIR_FOR_TESTS) + "/models/calibration/2080ti-papers.json");
  EXPECT_EQ(f.preset, "2080ti");
  EXPECT_GE(f.figures.size(), 90u);
}

TEST(PaperCalibration, BadFilesNameTheFileTheFigureAndTheField) {
  const auto error_for = [](const Json& doc) {
    const std::string path = write_doc(doc, "bad.json");
    return test_util::error_of([&] { (void)read_paper_figures(path); });
  };
  Json doc = figures_doc();
  doc["figures"][2].erase("published_ms");
  EXPECT_NE(error_for(doc).find("bad.json: figures[2].published_ms: missing required field"), std::string::npos)
      << error_for(doc);
  doc = figures_doc();
  doc["figures"][0]["role"] = "train";
  EXPECT_NE(error_for(doc).find("figures[0].role: 'train' must be fit or held_out"), std::string::npos)
      << error_for(doc);
  doc = figures_doc();
  doc["preset"] = "cpu";
  EXPECT_NE(error_for(doc).find("bad.json: preset: "), std::string::npos) << error_for(doc);
  doc["preset"] = "tpu";
  EXPECT_NE(error_for(doc).find("bad.json: preset: "), std::string::npos) << error_for(doc);
  doc = figures_doc();
  doc["figures"][0]["published"] = 3.0;  // a misspelt field is not ignored
  EXPECT_NE(error_for(doc).find("figures[0].published: unknown field"), std::string::npos) << error_for(doc);
  doc = figures_doc();
  doc["figures"][1]["protocol"] = "neuroshard:preset=v100";
  EXPECT_NE(error_for(doc).find("must not name a preset"), std::string::npos);
  doc = figures_doc();
  doc["figures"][13]["dim_sums"] = {64};
  EXPECT_NE(error_for(doc).find("figures[13].dim_sums"), std::string::npos) << error_for(doc);
  doc = figures_doc();
  doc["features"] = {"calls", "update_bytes"};  // the backward alone has it: no ratio splits it
  EXPECT_NE(error_for(doc).find("bad.json: features[1]: 'update_bytes' is not a feature both passes have"),
            std::string::npos)
      << error_for(doc);
  doc["features"] = {"calls", "flops"};
  EXPECT_NE(error_for(doc).find("features[1]: 'flops'"), std::string::npos) << error_for(doc);
  doc = figures_doc();
  doc["backward_to_forward"]["ratio"] = 0.0;
  EXPECT_NE(error_for(doc).find("bad.json: backward_to_forward.ratio: must be positive"), std::string::npos)
      << error_for(doc);
  doc = figures_doc();
  doc.erase("backward_to_forward");
  EXPECT_NE(error_for(doc).find("backward_to_forward: missing required field"), std::string::npos) << error_for(doc);
  doc = figures_doc();
  for (auto& f : doc["figures"]) f["role"] = "held_out";
  EXPECT_NE(error_for(doc).find("needs at least"), std::string::npos);
  EXPECT_NE(test_util::error_of([] {
              (void)read_paper_figures("/nonexistent/figures.json");
            }).find("/nonexistent/figures.json"),
            std::string::npos);
}

}  // namespace
}  // namespace embshard
