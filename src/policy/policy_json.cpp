// The envelope of policy files (policy_json.h).
#include "policy/policy_json.h"

#include <algorithm>

#include "embshard/core/error.h"
#include "nn/nn_json.h"

namespace embshard::detail {
namespace {

using Json = nlohmann::json;
constexpr const char* kFormatName = "embshard-policy";

Json features_json(const FeatureScaler& s) {
  const auto& names = feature_names();
  return {{"version", kFeatureVersion},
          {"names", std::vector<std::string>(names.begin(), names.end())},
          {"scaling", to_string(s.mode)},
          {"mean", std::vector<double>(s.mean.begin(), s.mean.end())},
          {"scale", std::vector<double>(s.scale.begin(), s.scale.end())}};
}

Json training_json(const PolicyTraining& t) {
  return {{"tasks", t.tasks},
          {"tasks_sha256", t.tasks_sha256},
          {"num_tasks", t.num_tasks},
          {"protocol", t.protocol},
          {"device_kind", t.device_kind},
          {"devices", t.devices},
          {"backend", t.backend},
          {"batch_size", t.batch_size},
          {"seed", t.seed},
          {"iterations", t.iterations},
          {"real_evaluations", t.real_evaluations},
          {"env_steps", t.env_steps},
          {"wall_s", t.wall_s},
          {"created_utc", t.created_utc},
          {"embshard_version", t.embshard_version},
          {"metrics", t.metrics},
          {"options", t.options}};
}

FeatureScaler read_features(const JsonNode& n, const std::vector<FeatureScaling>& scalings) {
  n.only_keys({"version", "names", "scaling", "mean", "scale"});
  const std::int64_t version = n.at("version").as_int();
  if (version != kFeatureVersion) {
    n.at("version").fail(concat("the policy was trained on feature set version ", version,
                                "; this embshard computes version ", kFeatureVersion, " (retrain it)"));
  }
  const JsonNode names = n.at("names");
  names.expect_array();
  const auto& expected = feature_names();
  if (names.size() != expected.size())
    names.fail(concat("expected ", expected.size(), " features, got ", names.size()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (names.at(i).as_string() != expected[i]) {
      names.at(i).fail(concat("expected feature '", expected[i], "' (this build's feature set)"));
    }
  }
  FeatureScaler s;
  s.mode = parse_feature_scaling(n.at("scaling").as_string());
  if (std::find(scalings.begin(), scalings.end(), s.mode) == scalings.end()) {
    std::string allowed;
    for (const FeatureScaling scaling : scalings)
      allowed += concat(allowed.empty() ? "'" : " or '", to_string(scaling), "'");
    n.at("scaling").fail(concat("expected ", allowed));
  }
  const std::vector<double> mean = read_numbers(n.at("mean"), expected.size());
  const std::vector<double> scale = read_numbers(n.at("scale"), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!(scale[i] > 0)) n.at("scale").at(i).fail("a scale must be positive");
    s.mean[i] = mean[i];
    s.scale[i] = scale[i];
  }
  return s;
}

PolicyTraining read_training(const JsonNode& n) {
  n.only_keys({"tasks", "tasks_sha256", "num_tasks", "protocol", "device_kind", "devices", "backend", "batch_size",
               "seed", "iterations", "real_evaluations", "env_steps", "wall_s", "created_utc", "embshard_version",
               "metrics", "options"});
  PolicyTraining t;
  t.tasks = n.at("tasks").as_string();
  t.tasks_sha256 = n.at("tasks_sha256").as_string();
  t.num_tasks = static_cast<int>(n.at("num_tasks").as_int(0, 1 << 30));
  t.protocol = n.at("protocol").as_string();
  t.device_kind = n.at("device_kind").as_string();
  t.devices = static_cast<int>(n.at("devices").as_int(0, 1 << 20));
  t.backend = n.at("backend").as_string();
  t.batch_size = n.at("batch_size").as_int(0);
  t.seed = n.at("seed").as_uint64();
  t.iterations = n.at("iterations").as_int(0);
  t.real_evaluations = n.at("real_evaluations").as_int(0);
  t.env_steps = n.at("env_steps").as_int(0);
  t.wall_s = n.at("wall_s").as_double(0);
  t.created_utc = n.at("created_utc").as_string();
  t.embshard_version = n.at("embshard_version").as_string();
  const JsonNode metrics = n.at("metrics");
  metrics.expect_object();
  for (const auto& [name, value] : metrics.value().items()) t.metrics[name] = metrics.at(name).as_double();
  if (n.has("options")) {  // absent in policy files written before issue 19
    const JsonNode options = n.at("options");
    options.expect_object();
    for (const auto& [name, value] : options.value().items()) t.options[name] = options.at(name).as_string();
  }
  return t;
}

}  // namespace

Json policy_document(const std::string& kind, const FeatureScaler& features, Json parameters,
                     const PolicyTraining& training) {
  return {{"format", kFormatName},
          {"version", kPolicyFileVersion},
          {"kind", kind},
          {"features", features_json(features)},
          {"parameters", std::move(parameters)},
          {"training", training_json(training)}};
}

JsonNode PolicyDocument::parameters() const {
  const JsonNode p = JsonNode(json, where).at("parameters");
  p.expect_object();
  return p;
}

PolicyDocument parse_policy_document(const std::string& text, const std::string& where, const std::string& kind,
                                     const std::vector<FeatureScaling>& scalings) {
  PolicyDocument doc;
  doc.json = parse_json(text, where);
  doc.where = where;
  const JsonNode root(doc.json, where);
  root.only_keys({"format", "version", "kind", "features", "parameters", "training"});
  if (root.at("format").as_string() != kFormatName) {
    root.at("format").fail(concat("expected \"", kFormatName, "\" (not a policy file)"));
  }
  const std::int64_t version = root.at("version").as_int();
  if (version != kPolicyFileVersion) {
    root.at("version").fail(
        concat("this embshard reads version ", kPolicyFileVersion, ", the file is version ", version));
  }
  const std::string got = root.at("kind").as_string();
  if (got != kind) root.at("kind").fail(concat("this is a '", got, "' policy; expected a '", kind, "' policy"));
  doc.features = read_features(root.at("features"), scalings);
  doc.training = read_training(root.at("training"));
  return doc;
}

}  // namespace embshard::detail

namespace embshard {

void check_policy_hardware(const std::string& kind, const std::string& path, const PolicyTraining& training,
                           const Task& task) {
  EMBSHARD_CHECK(training.device_kind == task.topology.device_kind, kind, ": policy '", path, "' was trained on '",
                 training.device_kind, "' devices (backend ", training.backend, ") but task '", task.id, "' has '",
                 task.topology.device_kind, "' devices (hardware=any uses it anyway)");
}

}  // namespace embshard
