// The neural cost models' features, layers and weights file (neural_weights.h).
#include "embshard/cost/neural_weights.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/fingerprint_json.h"
#include "core/json_reader.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/data/features.h"
#include "nn/nn_json.h"

namespace embshard {
namespace {

using Json = nlohmann::json;
using detail::add_mlp;
using detail::JsonNode;
using detail::read_mlp;
using detail::read_numbers;
using detail::reject_unused;

constexpr const char* kFormatName = "embshard-neural-cost";
constexpr double kMinSpread = 1e-6;  // below this a column is treated as constant (std 1)

// ---- writing --------------------------------------------------------------------------------

Json normaliser_json(const Normaliser& n) { return {{"names", n.names}, {"mean", n.mean}, {"std", n.std}}; }

Json accuracy_json(const ModelAccuracy& a) {
  return {{"mse", a.mse}, {"mape", a.mape}, {"r2", a.r2}, {"count", a.count}};
}

Json training_json(const TrainingProvenance& t) {
  Json accuracy = Json::object();
  for (const auto& [name, a] : t.accuracy) accuracy[name] = accuracy_json(a);
  return {{"samples_path", t.samples_path},
          {"samples_sha256", t.samples_sha256},
          {"num_samples", t.num_samples},
          {"sampler", t.sampler},
          {"backend", t.backend},
          {"batch_size", t.batch_size},
          {"fingerprint", detail::fingerprint_json(t.fingerprint)},
          {"seed", t.seed},
          {"epochs", t.epochs},
          {"best_epoch", t.best_epoch},
          {"created_utc", t.created_utc},
          {"embshard_version", t.embshard_version},
          {"accuracy", accuracy}};
}

Json compute_json(const ComputeNet& net) {
  Json parameters = Json::object();
  add_mlp(parameters, net.table_mlp);
  add_mlp(parameters, net.head);
  return {{"inputs", normaliser_json(net.inputs)},
          {"outputs", net.outputs},
          {"fw_share", net.fw_share},
          {"parameters", parameters},
          {"training", training_json(net.training)}};
}

Json comm_json(const CommNet& net) {
  Json parameters = Json::object();
  add_mlp(parameters, net.mlp);
  return {{"devices", net.devices},
          {"inputs", normaliser_json(net.inputs)},
          {"parameters", parameters},
          {"training", training_json(net.training)}};
}

// ---- reading --------------------------------------------------------------------------------

Normaliser read_normaliser(const JsonNode& n, const std::vector<std::string>& expected_names) {
  n.only_keys({"names", "mean", "std"});
  Normaliser norm;
  const JsonNode names = n.at("names");
  names.expect_array();
  for (std::size_t i = 0; i < names.size(); ++i) norm.names.push_back(names.at(i).as_string());
  if (norm.names != expected_names) {
    names.fail(detail::concat("expected the inputs ", Json(expected_names).dump(), ", got ", Json(norm.names).dump()));
  }
  norm.mean = read_numbers(n.at("mean"), expected_names.size());
  norm.std = read_numbers(n.at("std"), expected_names.size(), 0.0);
  for (std::size_t i = 0; i < norm.std.size(); ++i) {
    if (!(norm.std[i] > 0)) n.at("std").at(i).fail("a standard deviation must be positive");
  }
  return norm;
}

ModelAccuracy read_accuracy(const JsonNode& n) {
  n.only_keys({"mse", "mape", "r2", "count"});
  return {n.at("mse").as_double(0), n.at("mape").as_double(0), n.at("r2").as_double(), n.at("count").as_int(0)};
}

TrainingProvenance read_training(const JsonNode& n) {
  n.only_keys({"samples_path", "samples_sha256", "num_samples", "sampler", "backend", "batch_size", "fingerprint",
               "seed", "epochs", "best_epoch", "created_utc", "embshard_version", "accuracy"});
  TrainingProvenance t;
  t.samples_path = n.at("samples_path").as_string();
  t.samples_sha256 = n.at("samples_sha256").as_string();
  if (t.samples_sha256.size() != 64) n.at("samples_sha256").fail("expected 64 hex digits (SHA-256)");
  t.num_samples = n.at("num_samples").as_int(1);
  t.sampler = n.at("sampler").as_string();
  t.backend = n.at("backend").as_string();
  t.batch_size = n.at("batch_size").as_int(1);
  t.fingerprint = detail::read_fingerprint(n.at("fingerprint"));
  t.seed = n.at("seed").as_uint64();
  t.epochs = static_cast<int>(n.at("epochs").as_int(0, 1 << 30));
  t.best_epoch = static_cast<int>(n.at("best_epoch").as_int(0, 1 << 30));
  t.created_utc = n.at("created_utc").as_string();
  t.embshard_version = n.at("embshard_version").as_string();
  const JsonNode accuracy = n.at("accuracy");
  accuracy.expect_object();
  for (const auto& [name, value] : accuracy.value().items()) t.accuracy[name] = read_accuracy(accuracy.at(name));
  return t;
}

ComputeNet read_compute(const JsonNode& n) {
  n.only_keys({"inputs", "outputs", "fw_share", "parameters", "training"});
  ComputeNet net;
  const auto& names = table_feature_names();
  net.inputs = read_normaliser(n.at("inputs"), {names.begin(), names.end()});
  const JsonNode outputs = n.at("outputs");
  outputs.expect_array();
  for (std::size_t i = 0; i < outputs.size(); ++i) net.outputs.push_back(outputs.at(i).as_string());
  if (net.outputs != std::vector<std::string>{"comp_ms"} && net.outputs != std::vector<std::string>{"fw_ms", "bw_ms"}) {
    outputs.fail("expected [\"comp_ms\"] or [\"fw_ms\", \"bw_ms\"]");
  }
  net.fw_share = n.at("fw_share").as_double(0);
  if (net.fw_share > 1) n.at("fw_share").fail("expected a share in [0, 1]");
  const JsonNode parameters = n.at("parameters");
  parameters.expect_object();
  std::vector<std::string> used;
  const int encoding = compute_table_widths().back();
  net.table_mlp = read_mlp(
      parameters, "table_mlp",
      layer_widths(kNumCostFeatures, {compute_table_widths().begin(), compute_table_widths().end() - 1}, encoding),
      true, used);
  net.head = read_mlp(parameters, "head",
                      layer_widths(encoding, compute_head_widths(), static_cast<int>(net.outputs.size())), false, used);
  reject_unused(parameters, used);
  net.training = read_training(n.at("training"));
  return net;
}

CommNet read_comm(const JsonNode& n, bool forward) {
  n.only_keys({"devices", "inputs", "parameters", "training"});
  CommNet net;
  net.forward = forward;
  net.devices = static_cast<int>(n.at("devices").as_int(2, 1 << 16));
  net.inputs = read_normaliser(n.at("inputs"), comm_input_names(forward, net.devices));
  const JsonNode parameters = n.at("parameters");
  parameters.expect_object();
  std::vector<std::string> used;
  net.mlp = read_mlp(parameters, "mlp",
                     layer_widths(static_cast<int>(net.inputs.names.size()), comm_widths(), net.devices), false, used);
  reject_unused(parameters, used);
  net.training = read_training(n.at("training"));
  return net;
}

}  // namespace

const std::array<std::string, kNumCostFeatures>& table_feature_names() {
  static const std::array<std::string, kNumCostFeatures> names = [] {
    std::array<std::string, kNumCostFeatures> n;
    for (int i = 0; i < kNumReuseBins; ++i) n[static_cast<std::size_t>(i)] = "bin_" + std::to_string(i);
    n[17] = "dim";
    n[18] = "pooling_factor";
    n[19] = "rows";
    return n;
  }();
  return names;
}

TableFeatures table_features(const TableStats& stats, int cols, double row_share) {
  // NeuroShard's 20, picked by name from the one feature definition (data/features.h).
  static const std::array<int, kNumCostFeatures> picked = [] {
    std::array<int, kNumCostFeatures> index{};
    for (std::size_t i = 0; i < index.size(); ++i) index[i] = feature_index(table_feature_names()[i]);
    return index;
  }();
  const FeatureVector all = shard_features(stats, cols, row_share, WeightType::kF32);
  TableFeatures f{};
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(all[static_cast<std::size_t>(picked[i])]);
  return f;
}

Normaliser Normaliser::fit(std::vector<std::string> names, std::span<const std::vector<double>> rows) {
  EMBSHARD_CHECK(rows.size() >= 2, "normalisation needs at least 2 rows, got ", rows.size());
  Normaliser n;
  const std::size_t width = names.size();
  n.names = std::move(names);
  n.mean.assign(width, 0.0);
  n.std.assign(width, 0.0);
  for (const auto& row : rows) {
    EMBSHARD_ASSERT(row.size() == width);
    for (std::size_t i = 0; i < width; ++i) n.mean[i] += row[i] / static_cast<double>(rows.size());
  }
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < width; ++i) n.std[i] += (row[i] - n.mean[i]) * (row[i] - n.mean[i]);
  }
  for (std::size_t i = 0; i < width; ++i) {
    const double spread = std::sqrt(n.std[i] / static_cast<double>(rows.size() - 1));
    n.std[i] = spread > kMinSpread * std::max(1.0, std::abs(n.mean[i])) ? spread : 1.0;
  }
  return n;
}

void Normaliser::apply(std::span<float> x) const {
  EMBSHARD_ASSERT(x.size() == names.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EMBSHARD_CHECK(std::isfinite(x[i]), "neural cost model: input '", names[i], "' is not finite (", x[i], ")");
    x[i] = static_cast<float>((static_cast<double>(x[i]) - mean[i]) / std[i]);
  }
}

std::vector<int> layer_widths(int in, const std::vector<int>& hidden, int out) {
  std::vector<int> widths{in};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  widths.push_back(out);
  return widths;
}

const std::vector<int>& compute_table_widths() {
  static const std::vector<int> w{128, 32};
  return w;
}
const std::vector<int>& compute_head_widths() {
  static const std::vector<int> w{64};
  return w;
}
const std::vector<int>& comm_widths() {
  static const std::vector<int> w{128, 64, 32, 16};
  return w;
}

std::vector<std::string> comm_input_names(bool forward, int devices) {
  std::vector<std::string> names;
  for (int d = 0; d < devices; ++d) names.push_back("dim_sum_" + std::to_string(d));
  if (forward) {
    for (int d = 0; d < devices; ++d) names.push_back("late_ms_" + std::to_string(d));
  }
  return names;
}

NeuralWeights parse_neural_weights(const std::string& text, const std::string& where) {
  const Json doc = detail::parse_json(text, where);
  const JsonNode root(doc, where);
  root.only_keys({"format", "version", "compute", "fw_comm", "bw_comm"});
  if (root.at("format").as_string() != kFormatName) {
    root.at("format").fail(detail::concat("expected \"", kFormatName, "\" (not a neural weights file)"));
  }
  const std::int64_t version = root.at("version").as_int();
  if (version != kNeuralWeightsVersion) {
    root.at("version").fail(
        detail::concat("this embshard reads version ", kNeuralWeightsVersion, ", the file is version ", version));
  }
  NeuralWeights w;
  if (root.has("compute")) w.compute = read_compute(root.at("compute"));
  if (root.has("fw_comm")) w.fw_comm = read_comm(root.at("fw_comm"), true);
  if (root.has("bw_comm")) w.bw_comm = read_comm(root.at("bw_comm"), false);
  if (!w.compute && !w.fw_comm && !w.bw_comm) root.fail("holds no model (expected compute, fw_comm or bw_comm)");
  if (w.fw_comm.has_value() != w.bw_comm.has_value()) root.fail("fw_comm and bw_comm come together");
  if (w.fw_comm && w.fw_comm->devices != w.bw_comm->devices) {
    root.fail(detail::concat("fw_comm is for ", w.fw_comm->devices, " devices, bw_comm for ", w.bw_comm->devices));
  }
  return w;
}

NeuralWeights read_neural_weights(const std::string& path) { return parse_neural_weights(read_file(path), path); }

std::string neural_weights_json(const NeuralWeights& w) {
  Json doc;
  doc["format"] = kFormatName;
  doc["version"] = kNeuralWeightsVersion;
  if (w.compute) doc["compute"] = compute_json(*w.compute);
  if (w.fw_comm) doc["fw_comm"] = comm_json(*w.fw_comm);
  if (w.bw_comm) doc["bw_comm"] = comm_json(*w.bw_comm);
  return doc.dump() + "\n";  // compact: tens of thousands of numbers
}

void write_neural_weights(const std::string& path, const NeuralWeights& w) {
  write_file_atomic(path, neural_weights_json(w));
}

std::vector<float> encode_table(const ComputeNet& net, const TableFeatures& raw) {
  TableFeatures z = raw;
  net.inputs.apply(z);
  std::vector<float> encoding(static_cast<std::size_t>(net.table_mlp.out()));
  net.table_mlp.forward(z, encoding);
  return encoding;
}

ComputePrediction predict_from_encoding(const ComputeNet& net, std::span<const float> summed) {
  std::array<float, 2> y{};
  net.head.forward(summed, std::span<float>(y.data(), net.outputs.size()));
  if (net.outputs.size() == 2) return {std::max(0.0, double{y[0]}), std::max(0.0, double{y[1]})};
  const double total = std::max(0.0, double{y[0]});
  return {total * net.fw_share, total * (1.0 - net.fw_share)};
}

std::vector<double> predict_comm(const CommNet& net, std::span<const double> raw_inputs) {
  std::vector<float> x(raw_inputs.begin(), raw_inputs.end());
  net.inputs.apply(x);
  std::vector<float> y(static_cast<std::size_t>(net.devices));
  net.mlp.forward(x, y);
  std::vector<double> ms(y.size());
  for (std::size_t d = 0; d < y.size(); ++d) ms[d] = std::max(0.0, double{y[d]});
  return ms;
}

}  // namespace embshard
