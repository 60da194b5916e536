#pragma once
#include <cmath>
// Random neural cost models for tests: every shape of cost/neural_weights.h, weights drawn from a
// seed, training provenance of this machine (so `hardware=match` accepts them for cpu tasks).
#include <string>
#include <vector>

#include "embshard/cost/neural_weights.h"
#include "embshard/data/random.h"
#include "embshard/plan/plan.h"
#include "embshard/profile/cost_sample.h"

namespace embshard::test_util {

inline Mlp random_mlp(const std::string& prefix, const std::vector<int>& widths, bool relu_last, Rng& rng) {
  std::vector<Linear> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    Linear l;
    l.in = widths[i];
    l.out = widths[i + 1];
    const double scale = 1.0 / std::sqrt(static_cast<double>(l.in));
    for (int k = 0; k < l.in * l.out; ++k) l.weight.push_back(static_cast<float>(scale * (2 * rng.uniform() - 1)));
    // Positive biases keep some ReLUs open and the outputs (costs) mostly positive.
    for (int k = 0; k < l.out; ++k) l.bias.push_back(static_cast<float>(0.5 * rng.uniform()));
    layers.push_back(std::move(l));
  }
  return Mlp(prefix, std::move(layers), relu_last);
}

inline TrainingProvenance test_provenance(std::int64_t batch_size, const std::string& device_kind = "cpu") {
  TrainingProvenance t;
  t.samples_path = "synthetic";
  t.samples_sha256 = std::string(64, '0');
  t.num_samples = 100;
  t.sampler = "test";
  t.backend = "cpu";
  t.batch_size = batch_size;
  t.fingerprint = this_machine(device_kind, 1);
  t.created_utc = "2026-11-21T00:00:00Z";
  t.embshard_version = embshard_version();
  t.accuracy["model"] = {1.0, 0.1, 0.9, 10};
  return t;
}

inline Normaliser identity_normaliser(std::vector<std::string> names, double scale) {
  Normaliser n;
  n.mean.assign(names.size(), 0.0);
  n.std.assign(names.size(), scale);
  n.names = std::move(names);
  return n;
}

/** A compute model (K outputs) and, with devices > 0, comm models for that many devices. */
inline NeuralWeights random_weights(std::uint64_t seed, int outputs, int devices) {
  Rng rng(seed);
  NeuralWeights w;
  ComputeNet c;
  const auto& names = table_feature_names();
  c.inputs = identity_normaliser({names.begin(), names.end()}, 1.0);
  c.inputs.std[17] = 64;   // dim
  c.inputs.std[18] = 10;   // pooling
  c.inputs.std[19] = 1e6;  // rows
  c.table_mlp = random_mlp("table_mlp", {kNumCostFeatures, 128, 32}, true, rng);
  c.head = random_mlp("head", {32, 64, outputs}, false, rng);
  c.outputs = outputs == 2 ? std::vector<std::string>{"fw_ms", "bw_ms"} : std::vector<std::string>{"comp_ms"};
  c.fw_share = 0.3;
  c.training = test_provenance(8192);
  w.compute = std::move(c);
  for (bool forward : {true, false}) {
    if (devices <= 0) break;
    CommNet n;
    n.forward = forward;
    n.devices = devices;
    n.inputs = identity_normaliser(comm_input_names(forward, devices), 100.0);
    const int in = forward ? 2 * devices : devices;
    n.mlp = random_mlp("mlp", {in, 128, 64, 32, 16, devices}, false, rng);
    n.training = test_provenance(8192);
    (forward ? w.fw_comm : w.bw_comm) = std::move(n);
  }
  return w;
}

}  // namespace embshard::test_util
