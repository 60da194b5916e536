// The report of a fitted cost model (fit_report.h).
#include "embshard/report/fit_report.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "report/html_page.h"
#include "report/svg_plot.h"

namespace embshard {
namespace {

constexpr double kBand = 1.25;  // the dashed lines at predicted = measured × 1.25 and ÷ 1.25

/** One log axis for both coordinates, covering every positive value of `points`. */
report::Axis shared_axis(const std::vector<HeldOutPoint>& points) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  for (const HeldOutPoint& p : points) {
    for (const double v : {p.measured_ms, p.predicted_ms}) {
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  return hi > 0 ? report::log_axis(lo, hi) : report::log_axis(0.01, 1.0);
}

std::string table_html(const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "";
  std::ostringstream out;
  out << "<table class='sortable'><thead><tr>";
  for (const std::string& name : rows[0]) out << "<th>" << xml_escape(name) << "</th>";
  out << "</tr></thead><tbody>\n";
  for (std::size_t r = 1; r < rows.size(); ++r) {
    out << "<tr>";
    for (const std::string& cell : rows[r]) out << "<td>" << xml_escape(cell) << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

std::string percent(double share) { return report::fixed(100.0 * share, 1) + "%"; }

FitPanel calibration_panel(const std::string& title, const std::vector<HeldOutPoint>& points,
                           const RelativeErrors& test, const RelativeErrors& train) {
  return {title,
          points,
          {{"median error, held out", percent(test.median)},
           {"mean error, held out", percent(test.mean)},
           {"90th percentile error, held out", percent(test.p90)},
           {"median error on the fitted samples", percent(train.median)},
           {"fitted samples", std::to_string(train.count)}}};
}

/** The figures of one neural model's panel: its held-out error, R² and training run. */
FitPanel neural_panel(const TrainedModelFit& m) {
  FitPanel panel{m.title, m.points, {}};
  const auto model = m.training.accuracy.find("model");
  if (model != m.training.accuracy.end()) {
    panel.figures = {{"mean error (MAPE), held out", percent(model->second.mape)},
                     {"R², held out", report::fixed(model->second.r2, 3)}};
  }
  panel.figures.emplace_back("epochs (best kept)",
                             std::to_string(m.training.epochs) + " (" + std::to_string(m.training.best_epoch) + ")");
  return panel;
}

std::string sample_file_line(const TrainingProvenance& t) {
  return t.samples_path + " (" + std::to_string(t.num_samples) + " samples, SHA-256 " + t.samples_sha256.substr(0, 12) +
         "…)";
}

}  // namespace

std::string fit_panel_svg(const FitPanel& panel) {
  const double left = 64, top = 34, size = 300, right = left + size, bottom = top + size;
  const report::Axis axis = shared_axis(panel.points);
  report::Svg svg(right + 24, bottom + 44, panel.title + ": predicted against measured, ms");
  svg.text(left, 16, panel.title, "start", 13, " font-weight='bold'");
  svg.y_axis(axis, left, top, bottom, right, "predicted ms");
  svg.x_axis(axis, bottom, left, right, top, "measured ms");
  const auto at = [&](double measured, double predicted) {
    return std::pair{report::x_of(axis, measured, left, right), report::y_of(axis, predicted, top, bottom)};
  };
  const auto diagonal = [&](double factor, const std::string& extra) {  // predicted = factor × measured
    const double from = std::max(axis.min, axis.min / factor), to = std::min(axis.max, axis.max / factor);
    const auto [x0, y0] = at(from, from * factor);
    const auto [x1, y1] = at(to, to * factor);
    svg.line(x0, y0, x1, y1, "#888", extra);
  };
  diagonal(1.0, "");
  diagonal(kBand, " stroke-dasharray='4 3'");
  diagonal(1.0 / kBand, " stroke-dasharray='4 3'");
  for (const HeldOutPoint& p : panel.points) {
    const auto [x, y] = at(p.measured_ms, p.predicted_ms);
    svg.circle(
        x, y, 2.5, "#4c78a8",
        "measured " + report::fixed(p.measured_ms, 4) + " ms, predicted " + report::fixed(p.predicted_ms, 4) + " ms");
  }
  if (panel.points.empty()) svg.text((left + right) / 2, (top + bottom) / 2, "no held-out samples", "middle", 12);
  return svg.str();
}

std::string fit_report_html(const FitReport& r) {
  EMBSHARD_CHECK(!r.panels.empty(), "report: the fit of '", r.title, "' has no model to show");
  std::ostringstream body;
  body << "<h1>" << xml_escape(r.title) << "</h1>\n"
       << report::key_value_table(r.provenance)
       << "<p class='note'>Each point is one sample the model did not see while it was fitted. On the "
          "solid line the prediction equals the measurement; between the dashed lines it is within "
          "25%. Both axes are logarithmic, in ms.</p>\n";
  for (const FitPanel& panel : r.panels) {
    body << "<h2>" << xml_escape(panel.title) << "</h2>\n<figure>" << fit_panel_svg(panel) << "</figure>\n";
    std::vector<std::pair<std::string, std::string>> figures = panel.figures;
    figures.emplace_back("held-out samples", std::to_string(panel.points.size()));
    body << report::key_value_table(figures);
  }
  if (!r.table.empty()) body << "<h2>" << xml_escape(r.table_title) << "</h2>\n" << table_html(r.table);
  return report::page(r.title, body.str());
}

FitReport sim_calibration_report(const SimCalibration& c) {
  FitReport r;
  r.title = "sim model calibration: " + c.hardware.name;
  r.provenance = {{"samples", c.samples_path},
                  {"machine", c.hardware.name},
                  {"last-level cache", std::to_string(c.hardware.cache_bytes >> 20) + " MiB"},
                  {"batch", std::to_string(c.batch_size)},
                  {"model", "sim: per-feature coefficients, non-negative, fitted for relative error"}};
  r.panels = {calibration_panel("forward pass", c.fw_test_points, c.fw_test, c.fw_train),
              calibration_panel("backward pass", c.bw_test_points, c.bw_test, c.bw_train)};
  r.table_title = "Fitted coefficients (ms per unit of the feature)";
  r.table = {{"feature", "forward", "backward"}};
  for (int i = 0; i < kNumSimFeatures; ++i) {
    r.table.push_back({sim_feature_names()[i], report::fixed(c.hardware.fw[i], 6), report::fixed(c.hardware.bw[i], 6)});
  }
  return r;
}

FitReport neural_training_report(const std::vector<TrainedModelFit>& models, const std::string& weights_path) {
  EMBSHARD_CHECK(!models.empty(), "report: no trained model to show");
  FitReport r;
  r.title = "neural cost models: " + weights_path;
  const TrainingProvenance& first = models.front().training;
  r.provenance = {{"weights", weights_path},
                  {"machine", first.fingerprint.device_kind + ", " + first.fingerprint.cpu_model},
                  {"batch", std::to_string(first.batch_size)},
                  {"seed", std::to_string(first.seed)}};
  for (const TrainedModelFit& m : models) {
    r.provenance.emplace_back(m.name + " samples", sample_file_line(m.training));
    r.panels.push_back(neural_panel(m));
  }
  r.table_title = "Held-out accuracy: each model beside its baselines";
  r.table = {{"model", "estimator", "MSE ms²", "MAPE", "R²", "n"}};
  for (const TrainedModelFit& m : models) {
    for (const auto& [estimator, a] : m.training.accuracy) {
      r.table.push_back({m.name, estimator, report::fixed(a.mse, 5), percent(a.mape), report::fixed(a.r2, 3),
                         std::to_string(a.count)});
    }
  }
  return r;
}

}  // namespace embshard
