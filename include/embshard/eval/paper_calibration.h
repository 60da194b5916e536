#pragma once
/**
 * @file paper_calibration.h
 * @brief Fits the `sim` judge of a GPU preset to figures the papers measured on that GPU, and
 *        reports per figure how far the fitted judge is from it — on figures it was not fitted to.
 *
 * A figures file (JSON; models/calibration/2080ti-papers.json is the seeds' 2080 Ti) lists:
 *
 *   {"preset": "2080ti", "source": "...",
 *    "features": ["calls", "tables", "lookups", "miss_bytes"],
 *    "backward_to_forward": {"ratio": 4.0, "source": "..."},
 *    "figures": [
 *      {"id": "...", "kind": "protocol_mean", "protocol": "neuroshard:devices=4,max_dim=4",
 *       "sharder": "greedy:balance=lookup", "published_ms": 18.69, "role": "fit"|"held_out",
 *       "source": "paper 003 Table 1"},
 *      {"id": "...", "kind": "all_to_all", "batch_size": 65536, "dim_sums": [256, 256, 256, 256],
 *       "published_ms": 11.24, "role": "fit"|"held_out", "source": "paper 000 Table 4"},
 *      {"id": "...", "kind": "fusion_speedup", "protocol": "dreamshard:devices=1,tables=10",
 *       "published_ms": 1.5, "role": "fit", "source": "..."}]}
 *
 * `protocol_mean`: the mean over `tasks` generated tasks of the protocol (on the file's preset)
 * of the sharder's plan cost, objective max_sum (max over devices of fw comp + fw comm + bw comm
 * + bw comp: what the authors' evaluators report, refs-zha.md §3), input all-to-all omitted (the
 * authors' benchmarks load every device's indices before timing). Tasks a sharder cannot plan are
 * left out of its mean. `all_to_all`: the slowest device's time in one output all-to-all of
 * devices with these dim sums, all on one host.
 *
 * `fusion_speedup`: the mean over the protocol's tasks (one device) of the cost of every table in
 * a call of its own over the cost of all in one call.
 *
 * The model fitted: per device, Σ_f c_f · feature_f over the file's `features` (cost/analytic.h's,
 * at the preset's L2 size, forward and backward together; update_bytes and uvm_bytes at the
 * data-sheet roofline's rates, a known part of each figure; the others cost nothing) + 2 ·
 * (latency + max(send, recv) / bandwidth) (the link model, forward and backward all-to-all). Every parameter is
 * non-negative. Each figure's prediction is a mean of maxima over devices, so the fit alternates: fix each task's
 * slowest device, solve the non-negative least squares on relative error over the `fit` figures, with each fusion
 * speedup s held as the relation Σ singles − s · Σ fused = 0 (it separates the call cost from the per-table cost and
 * the latency, which the totals cannot), and repeat until the slowest devices stop changing (at most 100 rounds; the
 * round whose real predictions fit best is kept). The figures are totals, so no figure splits a c_f into forward and
 * backward: the file's `backward_to_forward` ratio does, the same for every feature (published evidence, named in the
 * file); update_bytes, which only the backward has, cannot be a fitted feature.
 */
#include <array>
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

/** Which of cost/analytic.h's features a fit may charge (uvm_bytes keeps the data sheet's rate). */
using FittedFeatures = std::array<bool, kNumSimFeatures>;

struct PaperFigures {
  std::string preset;
  std::string source;
  double backward_to_forward = 0.0;  ///< every compute term's backward ÷ its forward
  std::string split_source;          ///< the published evidence for that ratio
  FittedFeatures fitted{};           ///< the features the fit may charge; the others cost nothing
  std::vector<PaperFigure> figures;
};

/** Reads and checks a figures file; errors name the file, the figure and the field. */
[[nodiscard]] PaperFigures read_paper_figures(const std::string& path);

/** What a fit produced: the judge's constants and, per figure, published vs judged. */
struct PaperFit {
  SimHardware hardware;  ///< compute coefficients, forward and backward
  double a2a_latency_us = 0.0;
  double a2a_gbps = 0.0;             ///< per device, per direction
  double backward_to_forward = 0.0;  ///< the figures file's split
  std::string split_source;
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
