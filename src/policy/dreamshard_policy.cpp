// DreamShard's networks, policy file and plain C++ inference (dreamshard_policy.h).
#include "embshard/policy/dreamshard_policy.h"

#include <algorithm>
#include <map>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "nn/nn_json.h"
#include "policy/policy_json.h"

namespace embshard {
namespace {

constexpr const char* kKind = "dreamshard";

Encoding encode(const Mlp& table_mlp, const FeatureVector& z) {
  std::array<float, kNumTableFeatures> x{};
  for (int i = 0; i < kNumTableFeatures; ++i)
    x[static_cast<std::size_t>(i)] = static_cast<float>(z[static_cast<std::size_t>(i)]);
  Encoding e{};
  table_mlp.forward(x, e);
  return e;
}

float head(const Mlp& mlp, std::span<const float> x) {
  float y = 0.0f;
  mlp.forward(x, std::span<float>(&y, 1));
  return y;
}

std::array<float, kDreamShardKernelCosts> kernel_costs_of(const DreamShardNet& net, const Encoding& sum) {
  return {head(net.cost_fw, sum), head(net.cost_bw, sum), head(net.cost_comm, sum)};
}

std::vector<int> order_of(const DreamShardNet& net, const std::vector<Encoding>& cost_enc) {
  std::vector<double> cost;
  for (const Encoding& e : cost_enc) {
    const auto c = kernel_costs_of(net, e);
    cost.push_back(double{c[0]} + c[1] + c[2]);
  }
  return order_by_cost_descending(cost);
}

std::vector<Encoding> encode_all(const Mlp& table_mlp, const std::vector<FeatureVector>& features) {
  std::vector<Encoding> out;
  out.reserve(features.size());
  for (const FeatureVector& z : features) out.push_back(encode(table_mlp, z));
  return out;
}

}  // namespace

std::vector<const Mlp*> DreamShardNet::all() const {
  return {&cost_table, &cost_fw, &cost_bw, &cost_comm, &cost_overall, &policy_table, &policy_cost, &policy_head};
}

const std::vector<std::string>& dreamshard_net_names() {
  static const std::vector<std::string> names{"cost.table",   "cost.fw",      "cost.bw",     "cost.comm",
                                              "cost.overall", "policy.table", "policy.cost", "policy.head"};
  return names;
}

std::vector<int> dreamshard_widths(const std::string& name) {
  static const std::map<std::string, std::vector<int>> widths{
      {"cost.table", {kNumTableFeatures, 128, kDreamShardEncoding}},
      {"cost.fw", {kDreamShardEncoding, 64, 1}},
      {"cost.bw", {kDreamShardEncoding, 64, 1}},
      {"cost.comm", {kDreamShardEncoding, 64, 1}},
      {"cost.overall", {kDreamShardEncoding, 64, 1}},
      {"policy.table", {kNumTableFeatures, 128, kDreamShardEncoding}},
      {"policy.cost", {kDreamShardKernelCosts, 64, 32}},
      {"policy.head", {kDreamShardEncoding + 32, 1}}};
  const auto it = widths.find(name);
  EMBSHARD_ASSERT(it != widths.end());
  return it->second;
}

bool dreamshard_relu_last(const std::string& name) {
  return name == "cost.table" || name == "policy.table" || name == "policy.cost";
}

DreamShardPolicy parse_dreamshard_policy(const std::string& text, const std::string& where) {
  const detail::PolicyDocument doc =
      detail::parse_policy_document(text, where, kKind, {FeatureScaling::kPerTask, FeatureScaling::kTrainingSet});
  const detail::JsonNode parameters = doc.parameters();
  std::vector<std::string> used;
  std::vector<Mlp> mlps;
  for (const std::string& name : dreamshard_net_names()) {
    mlps.push_back(detail::read_mlp(parameters, name, dreamshard_widths(name), dreamshard_relu_last(name), used));
  }
  detail::reject_unused(parameters, used);
  DreamShardPolicy p;
  DreamShardNet& n = p.net;
  n.cost_table = std::move(mlps[0]);
  n.cost_fw = std::move(mlps[1]);
  n.cost_bw = std::move(mlps[2]);
  n.cost_comm = std::move(mlps[3]);
  n.cost_overall = std::move(mlps[4]);
  n.policy_table = std::move(mlps[5]);
  n.policy_cost = std::move(mlps[6]);
  n.policy_head = std::move(mlps[7]);
  n.features = doc.features;
  p.training = doc.training;
  return p;
}

DreamShardPolicy read_dreamshard_policy(const std::string& path) {
  return parse_dreamshard_policy(read_file(path), path);
}

std::string dreamshard_policy_json(const DreamShardPolicy& policy) {
  nlohmann::json parameters = nlohmann::json::object();
  for (const Mlp* mlp : policy.net.all()) detail::add_mlp(parameters, *mlp);
  return detail::policy_document(kKind, policy.net.features, std::move(parameters), policy.training).dump() + "\n";
}

void write_dreamshard_policy(const std::string& path, const DreamShardPolicy& policy) {
  write_file_atomic(path, dreamshard_policy_json(policy));
}

FeatureScaler dreamshard_per_task_scaling() {
  FeatureScaler per_task;
  per_task.mode = FeatureScaling::kPerTask;
  per_task.scale.fill(1.0);
  return per_task;
}

std::vector<FeatureVector> dreamshard_features(const Task& task, const FeatureScaler& scaling) {
  std::vector<FeatureVector> raw;
  for (const TableSpec& t : task.workload.tables) raw.push_back(table_features(t));
  EMBSHARD_CHECK(!raw.empty(), "dreamshard: task '", task.id, "' has no tables");
  const FeatureScaler scaler =
      scaling.mode == FeatureScaling::kPerTask ? FeatureScaler::fit(raw, FeatureScaling::kPerTask) : scaling;
  for (FeatureVector& f : raw) f = scaler.apply(f);
  return raw;
}

std::vector<double> dreamshard_table_costs(const DreamShardNet& net, const Task& task) {
  std::vector<double> cost;
  for (const Encoding& e : encode_all(net.cost_table, dreamshard_features(task, net.features))) {
    const auto c = kernel_costs_of(net, e);
    cost.push_back(double{c[0]} + c[1] + c[2]);
  }
  return cost;
}

DreamShardEpisode::DreamShardEpisode(const DreamShardNet& net, const Task& task)
    : DreamShardEpisode(net, task, dreamshard_features(task, net.features)) {}

DreamShardEpisode::DreamShardEpisode(const DreamShardNet& net, const Task& task,
                                     const std::vector<FeatureVector>& features)
    : net_(&net), cost_enc_(encode_all(net.cost_table, features)), policy_enc_(encode_all(net.policy_table, features)),
      cost_zero_(encode(net.cost_table, FeatureVector{})), policy_zero_(encode(net.policy_table, FeatureVector{})),
      cost_sum_(static_cast<std::size_t>(task.topology.num_devices()), Encoding{}),
      policy_sum_(static_cast<std::size_t>(task.topology.num_devices()), Encoding{}),
      state_(task, order_of(net, cost_enc_)) {}

Encoding DreamShardEpisode::device_sum(const std::vector<Encoding>& sums, const Encoding& zero, int device) const {
  return state_.tables_on(device).empty() ? zero : sums[static_cast<std::size_t>(device)];
}

std::array<float, kDreamShardKernelCosts> DreamShardEpisode::kernel_costs(int device) const {
  return kernel_costs_of(*net_, device_sum(cost_sum_, cost_zero_, device));
}

std::vector<float> DreamShardEpisode::logits() const {
  std::vector<float> out(static_cast<std::size_t>(state_.num_devices()));
  for (int d = 0; d < state_.num_devices(); ++d) {
    const auto costs = kernel_costs(d);
    std::array<float, kDreamShardEncoding + 32> x{};
    const Encoding e = device_sum(policy_sum_, policy_zero_, d);
    std::copy(e.begin(), e.end(), x.begin());
    net_->policy_cost.forward(costs, std::span<float>(x.data() + kDreamShardEncoding, 32));
    out[static_cast<std::size_t>(d)] = head(net_->policy_head, x);
  }
  return out;
}

void DreamShardEpisode::place(int device) {
  const auto t = static_cast<std::size_t>(state_.next_table());
  auto& cost = cost_sum_[static_cast<std::size_t>(device)];
  auto& policy = policy_sum_[static_cast<std::size_t>(device)];
  for (int k = 0; k < kDreamShardEncoding; ++k) {
    cost[static_cast<std::size_t>(k)] += cost_enc_[t][static_cast<std::size_t>(k)];
    policy[static_cast<std::size_t>(k)] += policy_enc_[t][static_cast<std::size_t>(k)];
  }
  state_.place(device);
}

float DreamShardEpisode::predicted_step_ms() const {
  Encoding top;
  top.fill(-INFINITY);
  for (int d = 0; d < state_.num_devices(); ++d) {
    const Encoding s = device_sum(cost_sum_, cost_zero_, d);
    for (int k = 0; k < kDreamShardEncoding; ++k)
      top[static_cast<std::size_t>(k)] = std::max(top[static_cast<std::size_t>(k)], s[static_cast<std::size_t>(k)]);
  }
  return head(net_->cost_overall, top);
}

bool place_greedily(DreamShardEpisode& episode) {
  while (!episode.state().done()) {
    const std::vector<int> legal = episode.state().legal_devices();
    if (legal.empty()) return false;
    episode.place(argmax_of(episode.logits(), legal));
  }
  return true;
}

float DreamShardEpisode::kernel_step_ms() const {
  std::array<float, kDreamShardKernelCosts> top;
  top.fill(-INFINITY);
  for (int d = 0; d < state_.num_devices(); ++d) {
    const auto costs = kernel_costs(d);
    for (std::size_t k = 0; k < top.size(); ++k) top[k] = std::max(top[k], costs[k]);
  }
  return top[0] + top[1] + 2.0f * top[2];
}

}  // namespace embshard
