#pragma once
/**
 * @file paper_calibration.h
 * @brief Fits the `sim` judge of a GPU preset to figures the papers measured on that GPU, and
 *        reports per figure how far the fitted judge is from it — on figures it was not fitted to.
 *
 * A figures file (JSON; models/calibration/2080ti-papers.json is the seeds' 2080 Ti) lists:
 *
 *   {"preset": "2080ti", "source": "...",
 *    "figures": [
 *      {"id": "...", "kind": "protocol_mean", "protocol": "neuroshard:devices=4,max_dim=4",
 *       "sharder": "greedy:balance=lookup", "published_ms": 18.69, "role": "fit"|"held_out",
 *       "source": "paper 003 Table 1"},
 *      {"id": "...", "kind": "all_to_all", "batch_size": 65536, "dim_sums": [256, 256, 256, 256],
 *       "published_ms": 11.24, "role": "fit"|"held_out", "source": "paper 000 Table 4"}]}
 *
 * `protocol_mean`: the mean over `tasks` generated tasks of the protocol (on the file's preset)
 * of the sharder's plan cost, objective max_sum (max over devices of fw comp + fw comm + bw comm
 * + bw comp: what the authors' evaluators report, refs-zha.md §3), input all-to-all omitted (the
 * authors' benchmarks load every device's indices before timing). Tasks a sharder cannot plan are
 * left out of its mean. `all_to_all`: the slowest device's time in one output all-to-all of
 * devices with these dim sums, all on one host.
 *
 * The model fitted: per device, Σ_f c_f · feature_f (cost/analytic.h's features at the preset's
 * L2 size, forward and backward together) + 2 · (latency + max(send, recv) / bandwidth) (the link
 * model, forward and backward all-to-all). All nine parameters are non-negative. Each figure's
 * prediction is a mean of maxima over devices, so the fit alternates: fix each task's slowest
 * device, solve the non-negative least squares on relative error over the `fit` figures, repeat
 * until the slowest devices stop changing. The forward / backward split of each c_f, which no
 * published total identifies, is the data-sheet roofline's (cost/analytic.h).
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/cost/analytic.h"

namespace embshard {

struct PaperFigure {
  std::string id;
  std::string kind;                    ///< protocol_mean | all_to_all
  std::string protocol;                ///< protocol_mean: a task protocol spec (without preset)
  std::string sharder;                 ///< protocol_mean: a sharder spec
  std::int64_t batch_size = 0;         ///< all_to_all
  std::vector<std::int64_t> dim_sums;  ///< all_to_all: one per device
  double published_ms = 0.0;
  bool fit = true;  ///< role: fit (true) or held_out
  std::string source;
};

struct PaperFigures {
  std::string preset;
  std::string source;
  std::vector<PaperFigure> figures;
};

/** Reads and checks a figures file; errors name the file, the figure and the field. */
[[nodiscard]] PaperFigures read_paper_figures(const std::string& path);

/** What a fit produced: the judge's constants and, per figure, published vs judged. */
struct PaperFit {
  SimHardware hardware;  ///< compute coefficients, forward and backward
  double a2a_latency_us = 0.0;
  double a2a_gbps = 0.0;  ///< per device, per direction
  struct Row {
    PaperFigure figure;
    double judged_ms = 0.0;
    int tasks = 0;  ///< protocol_mean: tasks the sharder planned
  };
  std::vector<Row> rows;
  int tasks_per_setting = 0;
  std::uint64_t seed = 0;
  int iterations = 0;
};

/**
 * Fits (file comment) on `tasks_per_setting` tasks of every protocol, generated with `seed`
 * (use a seed other than the reports' so held-out figures stay held out).
 */
[[nodiscard]] PaperFit fit_to_papers(const PaperFigures& figures, int tasks_per_setting, std::uint64_t seed,
                                     const Context& ctx);

/** The fit as Markdown: the constants, then figure | source | role | published | judged | error. */
[[nodiscard]] std::string paper_fit_markdown(const PaperFit& fit);

}  // namespace embshard
