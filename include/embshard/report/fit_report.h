#pragma once
/**
 * @file fit_report.h
 * @brief The report of a fitted cost model (`embshard profile calibrate --report`, `embshard
 *        train cost --report`): one self-contained HTML file, like the plan reports
 *        (html_report.h), that shows how far the model's predictions lie from measurements it did
 *        not see.
 *
 * It holds the provenance (sample file, machine, model), one predicted-against-measured scatter
 * per model on log–log axes in ms with the y = x line and a ±25% band, the model's held-out
 * figures beside each, and a table (the fitted coefficients, or the model beside its baselines).
 */
#include <string>
#include <utility>
#include <vector>

#include "embshard/cost/neural_weights.h"
#include "embshard/eval/calibrate.h"

namespace embshard {

/** One model's held-out predictions and the figures printed beside them. */
struct FitPanel {
  std::string title;  ///< "forward pass, held out"
  std::vector<HeldOutPoint> points;
  std::vector<std::pair<std::string, std::string>> figures;  ///< ("median error", "6.1%"), …
};

struct FitReport {
  std::string title;                                            ///< the page's heading
  std::vector<std::pair<std::string, std::string>> provenance;  ///< (what, value) rows
  std::vector<FitPanel> panels;
  std::string table_title;
  std::vector<std::vector<std::string>> table;  ///< first row: the column names; may be empty
};

/** The scatter of one panel as inline SVG (file comment). */
[[nodiscard]] std::string fit_panel_svg(const FitPanel& panel);

/** The report of a sim calibration: fw and bw held-out scatters, error figures, coefficients. */
[[nodiscard]] FitReport sim_calibration_report(const SimCalibration& calibration);

/** One trained neural model as its report shows it. */
struct TrainedModelFit {
  std::string name;                  ///< "compute", "fw_comm", "bw_comm"
  std::string title;                 ///< the panel's heading, e.g. "compute fw+bw, held out"
  TrainingProvenance training;       ///< its sample file, machine and held-out accuracy
  std::vector<HeldOutPoint> points;  ///< its held-out predictions
};

/**
 * The report of `embshard train cost`: one scatter per model with its held-out MAPE and R², the
 * sample files and machine, and a table of every model beside its baselines (MSE, MAPE, R², n).
 */
[[nodiscard]] FitReport neural_training_report(const std::vector<TrainedModelFit>& models,
                                               const std::string& weights_path);

/** The whole page; Error when `report` has no panel. */
[[nodiscard]] std::string fit_report_html(const FitReport& report);

}  // namespace embshard
