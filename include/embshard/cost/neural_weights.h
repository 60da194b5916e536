#pragma once
/**
 * @file neural_weights.h
 * @brief NeuroShard's neural cost models as data: the per-table features they read, their
 *        layers (nn/mlp.h), normalisation constants and training provenance, and the versioned
 *        weights file that carries them from `embshard train cost` (the learn module) to the
 *        `neural` cost model (cost/neural_cost.h).
 *
 * Models (paper 003 §3.2 and App. C; refs-zha.md §4.3–4.4):
 *
 *   compute   per table: features (below) → z-score → `table_mlp` Linear 20→128, ReLU, 128→32,
 *             ReLU; the shard's representation is the sum over its tables; `head` Linear 32→64,
 *             ReLU, 64→K. K = 1 predicts fw+bw compute (NeuroShard); K = 2 predicts fw and bw
 *             (the variant DreamShard's kernel heads need). An empty shard costs 0 (the papers'
 *             models would say head(0); real kernels say 0).
 *   fw_comm   for N devices: [dim_sum_0..N−1, late_ms_0..N−1] → z-score → `mlp` Linear
 *             2N→128→64→32→16→N with ReLUs: each device's forward all-to-all time from the
 *             moment it joins, including its wait for later devices (late_ms_d: how long after
 *             the earliest device d joined; NeuroShard's "sleep" inputs).
 *   bw_comm   for N devices: [dim_sum_0..N−1] → z-score → `mlp` Linear N→128→64→32→16→N.
 *
 * Table features, in this order (NeuroShard's 20, refs-zha.md §1.3, ordered by meaning rather
 * than by Python's alphabetical dict order): bin_0 … bin_16 (the reuse histogram), dim (the
 * shard's columns), pooling_factor and rows — picked by name from the one feature definition,
 * data/features.h's `shard_features` (all but size_gib). A row shard keeps the share
 * rows/num_rows of both rows and pooling_factor. z-score = (x − mean) / std with the training set's mean and sample
 * standard deviation; a column with (near-)zero spread gets std 1 (mean subtraction only), so
 * normalisation never divides by zero.
 *
 * File: JSON, `{"format": "embshard-neural-cost", "version": 1, "compute": {...},
 * "fw_comm": {...}, "bw_comm": {...}}` (each model optional, at least one present). A model
 * holds `"inputs": {"names", "mean", "std"}`, `"parameters": {"<pytorch name>": {"shape": [..],
 * "data": [..]}}` and `"training"` (provenance below); compute also `"outputs"` (["comp_ms"] or
 * ["fw_ms", "bw_ms"]) and `"fw_share"` (mean fw/(fw+bw) of the training data, which splits a
 * K = 1 prediction into the breakdown's two parts); comm models `"devices"`. Reading checks
 * everything: format, version, every shape against the architecture above, finite values,
 * positive stds; errors name the file and the field. Writing is atomic.
 */
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "embshard/core/fingerprint.h"
#include "embshard/data/table.h"
#include "embshard/nn/mlp.h"

namespace embshard {

inline constexpr int kNeuralWeightsVersion = 1;
inline constexpr int kNumCostFeatures = 20;
using TableFeatures = std::array<float, kNumCostFeatures>;

/** bin_0 … bin_16, dim, pooling_factor, rows. */
[[nodiscard]] const std::array<std::string, kNumCostFeatures>& table_feature_names();

/** Raw (not normalised) features of `cols` columns and `row_share` of the rows of a table. */
[[nodiscard]] TableFeatures table_features(const TableStats& stats, int cols, double row_share = 1.0);

/** Per-input z-scoring (file comment). */
struct Normaliser {
  std::vector<std::string> names;
  std::vector<double> mean;
  std::vector<double> std;
  /** Mean and sample std of each column of `rows` (each of names.size() values). */
  static Normaliser fit(std::vector<std::string> names, std::span<const std::vector<double>> rows);
  /** x ← (x − mean) / std, in place; throws Error naming the input if a value is not finite. */
  void apply(std::span<float> x) const;
};

/** One held-out sample: what was measured and what a model predicted for it. */
struct HeldOutPoint {
  double measured_ms = 0.0;
  double predicted_ms = 0.0;
};

/** Held-out accuracy of a model (or a baseline estimator) against measurements. */
struct ModelAccuracy {
  double mse = 0.0;   ///< ms²
  double mape = 0.0;  ///< mean |pred − y| / y over y > 0
  double r2 = 0.0;    ///< 1 − SSE / SST
  std::int64_t count = 0;
};

/** Where a model came from. */
struct TrainingProvenance {
  std::string samples_path;
  std::string samples_sha256;    ///< SHA-256 of the sample file as read
  std::int64_t num_samples = 0;  ///< used (train + validation + test)
  std::string sampler;           ///< the sample file's sampler spec
  std::string backend;           ///< "cpu", "cuda", "mpi"
  std::int64_t batch_size = 0;   ///< of the measurements: predictions are at this batch
  HardwareFingerprint fingerprint;
  std::uint64_t seed = 0;
  int epochs = 0;      ///< trained
  int best_epoch = 0;  ///< whose weights were kept (best validation MSE)
  std::string created_utc;
  std::string embshard_version;
  /** Test-split accuracy: "model" and the baselines (e.g. "sum_of_singles", "sim", "link"). */
  std::map<std::string, ModelAccuracy> accuracy;
};

struct ComputeNet {
  Normaliser inputs;                 ///< over table_feature_names()
  Mlp table_mlp;                     ///< "table_mlp": 20 → 128 → 32, ReLU after both
  Mlp head;                          ///< "head": 32 → 64 → K
  std::vector<std::string> outputs;  ///< {"comp_ms"} or {"fw_ms", "bw_ms"}
  double fw_share = 0.5;
  TrainingProvenance training;
};

struct CommNet {
  bool forward = true;  ///< fw_comm (dim sums + lateness) or bw_comm (dim sums)
  int devices = 0;
  Normaliser inputs;
  Mlp mlp;  ///< "mlp": in → 128 → 64 → 32 → 16 → devices
  TrainingProvenance training;
};

struct NeuralWeights {
  std::optional<ComputeNet> compute;
  std::optional<CommNet> fw_comm;
  std::optional<CommNet> bw_comm;
};

/** The layer widths of the file comment (hidden layers only). */
[[nodiscard]] const std::vector<int>& compute_table_widths();  ///< {128, 32}
[[nodiscard]] const std::vector<int>& compute_head_widths();   ///< {64}
[[nodiscard]] const std::vector<int>& comm_widths();           ///< {128, 64, 32, 16}
/** {in, hidden..., out}: the widths of an Mlp's layer chain. */
[[nodiscard]] std::vector<int> layer_widths(int in, const std::vector<int>& hidden, int out);
/** Input names of a comm model for `devices` devices. */
[[nodiscard]] std::vector<std::string> comm_input_names(bool forward, int devices);

/** Reads and checks a weights file (file comment); errors name `path` and the field. */
[[nodiscard]] NeuralWeights read_neural_weights(const std::string& path);
/** Parses weights from text; `where` names the source in errors. */
[[nodiscard]] NeuralWeights parse_neural_weights(const std::string& text, const std::string& where);
/** The weights as the file's JSON text. */
[[nodiscard]] std::string neural_weights_json(const NeuralWeights& weights);
/** Writes the weights atomically. */
void write_neural_weights(const std::string& path, const NeuralWeights& weights);

/** fw and bw compute of a shard whose tables have these raw features (empty → 0, 0). */
struct ComputePrediction {
  double fw_ms = 0.0;
  double bw_ms = 0.0;
};
/** One table's encoding: table_mlp(z-scored features), 32 values. */
[[nodiscard]] std::vector<float> encode_table(const ComputeNet& net, const TableFeatures& raw);
/** The head on a summed encoding, split into fw / bw (clamped at 0). */
[[nodiscard]] ComputePrediction predict_from_encoding(const ComputeNet& net, std::span<const float> summed);
/** A comm model's per-device prediction (ms, clamped at 0) from its raw inputs. */
[[nodiscard]] std::vector<double> predict_comm(const CommNet& net, std::span<const double> raw_inputs);

}  // namespace embshard
