#pragma once
/**
 * @file neural_cost.h
 * @brief The `neural` cost model: NeuroShard's pre-trained compute and communication models
 *        (cost/neural_weights.h) run in plain C++ inside the planner — no libtorch.
 *
 * Spec: `neural:weights=FILE,comm=auto|neural|link,hardware=match|any`.
 *
 *   weights   a weights file written by `embshard train cost`, or `builtin`: the weights compiled
 *             into this binary from models/cpu-default.json (trained on this project's `cpu`
 *             backend; docs/benchmarks.md says how they were collected and how well they fit)
 *   comm      neural: the file's fw_comm / bw_comm models (an error if they were trained for
 *             another number of devices than the task has); link: the task topology's link model;
 *             auto (default): neural when trained for the task's device count, else link
 *   hardware  match (default): the models must have been measured on the task's kind of device
 *             (fingerprint device_kind == topology device_kind), and the compute and comm models
 *             on the same machine; any: skip these checks (what-if use, reported in the detail)
 *
 * Predictions are at the batch the models were measured at (the weights' batch_size); with
 * comm=link the link model uses that batch too, so compute and comm stay on one scale.
 * Per-table encodings (table_mlp of a table's features) are cached per (table, columns, rows),
 * so a shard query costs one sum and the small head: microseconds.
 *
 * `default` (the planner's default cost model, resolved where the registry is built):
 * `neural:weights=builtin` where `builtin_weights_fit(task)`, else `sim`.
 */
#include <memory>
#include <string>
#include <string_view>

#include "embshard/cost/cost_model.h"
#include "embshard/cost/neural_weights.h"

namespace embshard {

/** The text of models/cpu-default.json as compiled in; empty if the build had none. */
[[nodiscard]] std::string_view builtin_weights_text();

/** Registers `neural` (parameters in the file comment). */
void register_neural_cost_model(CostModelRegistry& registry);

/** Whether the built-in weights exist and were measured on `task`'s kind of device. */
[[nodiscard]] bool builtin_weights_fit(const Task& task);

}  // namespace embshard
