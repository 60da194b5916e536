// AutoShard's network, policy file and plain C++ inference (autoshard_policy.h).
#include "embshard/policy/autoshard_policy.h"

#include <algorithm>
#include <cmath>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/data/random.h"
#include "nn/nn_json.h"
#include "policy/policy_json.h"

namespace embshard {
namespace {

constexpr const char* kKind = "autoshard";
constexpr int kF = kNumTableFeatures;
constexpr int kE = kAutoShardEmbed;
constexpr int kS = kAutoShardState;

struct MlpShape {
  const char* prefix;
  std::vector<int> widths;
  bool relu_last;
};

const std::vector<MlpShape>& mlp_shapes() {
  static const std::vector<MlpShape> shapes{{"t_fc", {kF, kAutoShardTableHidden, kE}, true},
                                            {"state_other_fc", {1, kE}, true},
                                            {"action_other_fc", {2, kE}, true},
                                            {"policy_fc", {kAutoShardPolicyInput, 128, 128, 64, 1}, false},
                                            {"value_fc", {kS, 64, 1}, false},
                                            {"cost_fc", {kE, 64, 1}, false}};
  return shapes;
}

template <typename Net>
auto* mlp_of(Net& net, const std::string& prefix) {
  if (prefix == "t_fc") return &net.t_fc;
  if (prefix == "state_other_fc") return &net.state_other_fc;
  if (prefix == "action_other_fc") return &net.action_other_fc;
  if (prefix == "policy_fc") return &net.policy_fc;
  if (prefix == "value_fc") return &net.value_fc;
  EMBSHARD_ASSERT(prefix == "cost_fc");
  return &net.cost_fc;
}

std::vector<float> uniform(Rng& rng, std::size_t n, double bound) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
  return v;
}

}  // namespace

AutoShardNet random_autoshard_net(std::uint64_t seed) {
  Rng rng(seed);
  AutoShardNet net;
  for (const MlpShape& s : mlp_shapes()) {
    std::vector<Linear> layers;
    for (std::size_t i = 0; i + 1 < s.widths.size(); ++i) {
      Linear l;
      l.in = s.widths[i];
      l.out = s.widths[i + 1];
      const double bound = 1.0 / std::sqrt(static_cast<double>(l.in));
      l.weight = uniform(rng, static_cast<std::size_t>(l.in * l.out), bound);
      l.bias = uniform(rng, static_cast<std::size_t>(l.out), bound);
      layers.push_back(std::move(l));
    }
    *mlp_of(net, s.prefix) = Mlp(s.prefix, std::move(layers), s.relu_last);
  }
  std::vector<LstmLayer> layers;
  const double bound = 1.0 / std::sqrt(static_cast<double>(kS));
  for (int k = 0; k < kAutoShardLstmLayers; ++k) {
    LstmLayer l;
    l.in = kS;
    l.hidden = kS;
    l.weight_ih = uniform(rng, static_cast<std::size_t>(4 * kS * kS), bound);
    l.weight_hh = uniform(rng, static_cast<std::size_t>(4 * kS * kS), bound);
    l.bias_ih = uniform(rng, static_cast<std::size_t>(4 * kS), bound);
    l.bias_hh = uniform(rng, static_cast<std::size_t>(4 * kS), bound);
    layers.push_back(std::move(l));
  }
  net.lstm = Lstm("lstm", std::move(layers));
  return net;
}

std::string autoshard_policy_json(const AutoShardPolicy& policy) {
  nlohmann::json parameters = nlohmann::json::object();
  for (const MlpShape& s : mlp_shapes()) detail::add_mlp(parameters, *mlp_of(policy.net, s.prefix));
  const Lstm& lstm = policy.net.lstm;
  for (int k = 0; k < lstm.num_layers(); ++k) {
    const LstmLayer& l = lstm.layers()[static_cast<std::size_t>(k)];
    detail::add_tensor(parameters, lstm.parameter_name(k, "weight_ih"), {4 * l.hidden, l.in}, l.weight_ih);
    detail::add_tensor(parameters, lstm.parameter_name(k, "weight_hh"), {4 * l.hidden, l.hidden}, l.weight_hh);
    detail::add_tensor(parameters, lstm.parameter_name(k, "bias_ih"), {4 * l.hidden}, l.bias_ih);
    detail::add_tensor(parameters, lstm.parameter_name(k, "bias_hh"), {4 * l.hidden}, l.bias_hh);
  }
  EMBSHARD_CHECK(policy.features.mode == FeatureScaling::kTrainingSet,
                 "autoshard policy: the features must use training_set scaling");
  return detail::policy_document(kKind, policy.features, std::move(parameters), policy.training).dump() + "\n";
}

void write_autoshard_policy(const std::string& path, const AutoShardPolicy& policy) {
  write_file_atomic(path, autoshard_policy_json(policy));
}

AutoShardPolicy parse_autoshard_policy(const std::string& text, const std::string& where) {
  const detail::PolicyDocument doc = detail::parse_policy_document(text, where, kKind, {FeatureScaling::kTrainingSet});
  AutoShardPolicy policy;
  policy.features = doc.features;
  policy.training = doc.training;
  const detail::JsonNode params = doc.parameters();
  std::vector<std::string> used;
  for (const MlpShape& s : mlp_shapes()) {
    *mlp_of(policy.net, s.prefix) = detail::read_mlp(params, s.prefix, s.widths, s.relu_last, used);
  }
  std::vector<LstmLayer> layers;
  for (int k = 0; k < kAutoShardLstmLayers; ++k) {
    const std::string p = "lstm.";
    LstmLayer l;
    l.in = kS;
    l.hidden = kS;
    l.weight_ih = detail::read_tensor(params, detail::concat(p, "weight_ih_l", k), {4 * kS, kS}, used);
    l.weight_hh = detail::read_tensor(params, detail::concat(p, "weight_hh_l", k), {4 * kS, kS}, used);
    l.bias_ih = detail::read_tensor(params, detail::concat(p, "bias_ih_l", k), {4 * kS}, used);
    l.bias_hh = detail::read_tensor(params, detail::concat(p, "bias_hh_l", k), {4 * kS}, used);
    layers.push_back(std::move(l));
  }
  policy.net.lstm = Lstm("lstm", std::move(layers));
  detail::reject_unused(params, used);
  return policy;
}

AutoShardPolicy read_autoshard_policy(const std::string& path) { return parse_autoshard_policy(read_file(path), path); }

std::vector<float> autoshard_inputs(const FeatureScaler& features, const Task& task) {
  std::vector<float> out;
  out.reserve(task.workload.tables.size() * kF);
  for (const TableSpec& t : task.workload.tables) {
    const FeatureVector x = features.apply(table_features(t));
    for (double v : x) out.push_back(static_cast<float>(v));
  }
  return out;
}

AutoShardScorer::AutoShardScorer(const AutoShardNet& net, std::span<const float> inputs)
    : net_(&net), inputs_(inputs.begin(), inputs.end()) {
  EMBSHARD_ASSERT(inputs.size() % kF == 0);
  tables_ = static_cast<int>(inputs.size() / kF);
  encoding_.resize(static_cast<std::size_t>(tables_) * kE);
  table_cost_.resize(static_cast<std::size_t>(tables_));
  for (int t = 0; t < tables_; ++t) {
    const auto row = static_cast<std::size_t>(t);
    std::span<float> e(encoding_.data() + row * kE, kE);
    net.t_fc.forward(std::span<const float>(inputs_.data() + row * kF, kF), e);
    float cost = 0.0F;
    net.cost_fc.forward(e, std::span<float>(&cost, 1));
    table_cost_[row] = cost;
  }
  const std::vector<float> zero(kF, 0.0F);
  zero_row_.resize(kE);
  net.t_fc.forward(zero, zero_row_);
}

std::vector<int> AutoShardScorer::order() const {
  return order_by_cost_descending(std::vector<double>(table_cost_.begin(), table_cost_.end()));
}

float AutoShardScorer::shard_cost(std::span<const int> tables) const {
  if (tables.empty()) return 0.0F;
  std::vector<float> sum(kE, 0.0F);
  for (int t : tables) {
    const float* e = encoding_.data() + static_cast<std::size_t>(t) * kE;
    for (int j = 0; j < kE; ++j) sum[static_cast<std::size_t>(j)] += e[j];
  }
  float cost = 0.0F;
  net_->cost_fc.forward(sum, std::span<float>(&cost, 1));
  return cost;
}

AutoShardObservation AutoShardScorer::observe(const PlacementState& state) const {
  EMBSHARD_ASSERT(!state.done() && state.num_tables() == tables_);
  AutoShardObservation obs;
  obs.next_table = state.next_table();
  obs.progress = static_cast<float>(state.placed()) / static_cast<float>(state.num_tables());
  obs.action_other.resize(static_cast<std::size_t>(2 * state.num_devices()));
  for (int d = 0; d < state.num_devices(); ++d) {
    obs.action_other[static_cast<std::size_t>(2 * d)] = shard_cost(state.tables_on(d));
    obs.action_other[static_cast<std::size_t>(2 * d + 1)] =
        static_cast<float>(static_cast<double>(state.bytes_on(d)) / static_cast<double>(std::int64_t{1} << 30));
  }
  return obs;
}

void AutoShardScorer::step(const AutoShardObservation& obs, const PlacementState& state, LstmState& lstm,
                           std::span<float> logits, float* value) const {
  const AutoShardNet& net = *net_;
  const int devices = state.num_devices();
  EMBSHARD_ASSERT(logits.size() == static_cast<std::size_t>(devices));
  EMBSHARD_ASSERT(obs.action_other.size() == static_cast<std::size_t>(2 * devices));
  // s = [t_fc(x_next), state_other_fc(progress)] → LSTM → h
  std::vector<float> s(kS);
  const float* e_next = encoding_.data() + static_cast<std::size_t>(obs.next_table) * kE;
  std::copy(e_next, e_next + kE, s.begin());
  net.state_other_fc.forward(std::span<const float>(&obs.progress, 1), std::span<float>(s.data() + kE, kE));
  std::vector<float> h(kS);
  net.lstm.step(s, lstm, h);
  if (value != nullptr) net.value_fc.forward(h, std::span<float>(value, 1));
  std::vector<float> in(kAutoShardPolicyInput);
  std::copy(h.begin(), h.end(), in.begin());
  for (int d = 0; d < devices; ++d) {
    float* a = in.data() + kS;
    std::copy(zero_row_.begin(), zero_row_.end(), a);
    for (int t : state.tables_on(d)) {
      const float* e = encoding_.data() + static_cast<std::size_t>(t) * kE;
      for (int j = 0; j < kE; ++j) a[j] += e[j];
    }
    net.action_other_fc.forward(std::span<const float>(obs.action_other.data() + 2 * d, 2),
                                std::span<float>(a + kE, kE));
    for (int j = 0; j < kS; ++j) in[static_cast<std::size_t>(2 * kS + j)] = h[static_cast<std::size_t>(j)] * a[j];
    net.policy_fc.forward(in, logits.subspan(static_cast<std::size_t>(d), 1));
  }
}

}  // namespace embshard
