// The `neural` cost model (neural_cost.h).
#include "embshard/cost/neural_cost.h"

#include <algorithm>
#include <unordered_map>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/core/spec.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/link_model.h"

namespace embshard {
namespace {

const std::vector<ParamSpec>& neural_params() {
  static const std::vector<ParamSpec> params = with_input_comm_params(
      {{"weights", ParamType::kString, "builtin", {}, {}, {}, "weights file from `embshard train cost`, or builtin"},
       {"comm",
        ParamType::kString,
        "auto",
        {},
        {},
        {"auto", "neural", "link"},
        "all-to-all costs: the file's comm models, the topology's link model, or neural where trained for the task's "
        "devices"},
       hardware_param("models")});
  return params;
}

std::shared_ptr<const NeuralWeights> load_weights(const std::string& where) {
  if (where != "builtin") return std::make_shared<const NeuralWeights>(read_neural_weights(where));
  EMBSHARD_CHECK(!builtin_weights_text().empty(),
                 "neural: this embshard was built without default weights (models/cpu-default.json); "
                 "train some with `embshard train cost` and pass weights=FILE");
  // Parsed once per process (thread-safe static): compare builds a cost model per task.
  static const std::shared_ptr<const NeuralWeights> builtin = std::make_shared<const NeuralWeights>(
      parse_neural_weights(std::string(builtin_weights_text()), "built-in models/cpu-default.json"));
  return builtin;
}

/** "" if the models may be used for `task` under `hardware=match`, else why not. */
std::string hardware_mismatch(const NeuralWeights& w, const Task& task, bool use_comm) {
  const HardwareFingerprint& compute = w.compute->training.fingerprint;
  if (compute.device_kind != task.topology.device_kind) {
    return detail::concat("the compute model was measured on '", compute.device_kind,
                          "' devices but the task's topology has '", task.topology.device_kind,
                          "' devices (hardware=any uses it anyway)");
  }
  if (use_comm) {
    const HardwareFingerprint& comm = w.fw_comm->training.fingerprint;
    if (comm.device_kind != compute.device_kind || comm.cpu_model != compute.cpu_model ||
        comm.logical_cpus != compute.logical_cpus) {
      return detail::concat("the compute model was measured on '", compute.cpu_model, "' (", compute.logical_cpus,
                            " cpus) but the comm models on '", comm.cpu_model, "' (", comm.logical_cpus, " cpus)");
    }
  }
  return "";
}

class NeuralComputeModel final : public ComputeModel {
 public:
  /** `sequence_rate`: what a sequence table's extra output rows cost (sim_sequence_output_ms). */
  NeuralComputeModel(std::shared_ptr<const NeuralWeights> weights, std::string where, SimHardware sequence_rate)
      : weights_(std::move(weights)), net_(*weights_->compute), where_(std::move(where)),
        sequence_rate_(std::move(sequence_rate)) {}

  [[nodiscard]] std::string spec() const override { return "neural"; }
  [[nodiscard]] CostSource source() const override { return CostSource::kModelled; }
  [[nodiscard]] std::string detail() const override {
    return detail::concat("neural compute model ", where_, " (", net_.training.num_samples, " ", net_.training.backend,
                          " samples at batch ", net_.training.batch_size, " on ", net_.training.fingerprint.cpu_model,
                          ", ", net_.training.fingerprint.llc_bytes >> 20,
                          " MiB last-level cache; a sequence table's extra output rows at sim's output-byte rate, ",
                          sequence_rate_.name, ")");
  }

  [[nodiscard]] bool costs_replicas() const override { return false; }

  [[nodiscard]] DeviceCompute device_compute(const Task& task, std::span<const PlacedShard> shards,
                                             const Context&) override {
    if (shards.empty()) return {};
    if (&task != task_) {
      encodings_.clear();
      task_ = &task;
    }
    std::vector<float> sum(static_cast<std::size_t>(net_.table_mlp.out()), 0.0f);
    for (const PlacedShard& p : shards) {
      EMBSHARD_CHECK(!p.is_replica(), "neural compute model: table '",
                     task.workload.tables[static_cast<std::size_t>(p.table)].name,
                     "' is data-parallel, and the model was trained on shards that serve the whole batch "
                     "only; judge data-parallel plans with sim or a measured backend");
      const std::vector<float>& e = encoding(task, p);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += e[i];
    }
    // Trained on pooled kernels: a sequence table's output rows beyond one per sample are added.
    const ComputePrediction y = predict_from_encoding(net_, sum);
    const DeviceCompute extra = sim_sequence_output_ms(sequence_rate_, task, shards);
    return {std::max(0.0, y.fw_ms + extra.fw_ms), std::max(0.0, y.bw_ms + extra.bw_ms)};
  }

 private:
  struct Key {
    int table;
    int cols;
    std::int64_t rows;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return static_cast<std::size_t>(
          derive_seed(static_cast<std::uint64_t>(k.rows),
                      (static_cast<std::uint64_t>(k.table) << 32) | static_cast<std::uint32_t>(k.cols)));
    }
  };

  const std::vector<float>& encoding(const Task& task, const PlacedShard& p) {
    const Key key{p.table, p.shard.num_cols(), p.shard.num_rows()};
    auto it = encodings_.find(key);
    if (it != encodings_.end()) return it->second;
    const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
    const double row_share = spec.row_share(p.shard.num_rows());
    try {
      return encodings_.emplace(key, encode_table(net_, table_features(spec.stats, key.cols, row_share))).first->second;
    } catch (const Error& e) {
      EMBSHARD_THROW("table '", spec.name, "': ", e.what());
    }
  }

  std::shared_ptr<const NeuralWeights> weights_;
  const ComputeNet& net_;
  std::string where_;
  SimHardware sequence_rate_;
  const Task* task_ = nullptr;
  std::unordered_map<Key, std::vector<float>, KeyHash> encodings_;
};

class NeuralCommModel final : public CommModel {
 public:
  NeuralCommModel(std::shared_ptr<const NeuralWeights> weights, std::string where, InputCommOptions input)
      : weights_(std::move(weights)), where_(std::move(where)), input_(input) {}
  [[nodiscard]] const InputCommOptions& input_options() const override { return input_; }

  [[nodiscard]] std::string spec() const override { return "neural"; }
  [[nodiscard]] std::string detail() const override {
    const TrainingProvenance& t = weights_->fw_comm->training;
    return detail::concat("neural comm models ", where_, " (", t.num_samples, " ", t.backend, " samples on ",
                          weights_->fw_comm->devices, " devices at batch ", t.batch_size, " on ",
                          t.fingerprint.cpu_model, ")");
  }

  /** Trained on all-to-alls of pooled columns (NeuroShard's comm samples): it sees every
   *  device's columns alike, partial sums or not. */
  [[nodiscard]] std::vector<DeviceComm> device_comm(const Task&, const OutputDims& outputs,
                                                    std::span<const double> fw_comp_ms) override {
    const std::vector<std::int64_t> dim_sums = outputs.totals();
    const std::size_t n = dim_sums.size();
    EMBSHARD_ASSERT(n == static_cast<std::size_t>(weights_->fw_comm->devices) && fw_comp_ms.size() == n);
    const double earliest = *std::min_element(fw_comp_ms.begin(), fw_comp_ms.end());
    const double latest = *std::max_element(fw_comp_ms.begin(), fw_comp_ms.end());
    std::vector<double> inputs(dim_sums.begin(), dim_sums.end());
    const std::vector<double> bw = predict_comm(*weights_->bw_comm, inputs);
    for (double t : fw_comp_ms) inputs.push_back(t - earliest);
    const std::vector<double> fw = predict_comm(*weights_->fw_comm, inputs);
    std::vector<DeviceComm> comm(n);
    for (std::size_t d = 0; d < n; ++d) {
      // The model's time includes the wait for the latest device; the breakdown keeps that apart.
      comm[d] = {std::max(0.0, fw[d] - (latest - fw_comp_ms[d])), bw[d]};
    }
    return comm;
  }

 private:
  std::shared_ptr<const NeuralWeights> weights_;
  std::string where_;
  InputCommOptions input_;
};

class NeuralCostModel final : public CostModel {
 public:
  NeuralCostModel(std::string spec, std::unique_ptr<ComputeModel> compute, std::unique_ptr<CommModel> comm)
      : spec_(std::move(spec)), compute_(std::move(compute)), comm_(std::move(comm)) {}
  [[nodiscard]] std::string spec() const override { return spec_; }
  [[nodiscard]] ComputeModel& compute() override { return *compute_; }
  [[nodiscard]] CommModel& comm() override { return *comm_; }
  /** A trained network offers no provable bound. */
  [[nodiscard]] std::optional<double> lower_bound(const Task&, Objective) const override { return std::nullopt; }

 private:
  std::string spec_;
  std::unique_ptr<ComputeModel> compute_;
  std::unique_ptr<CommModel> comm_;
};

/** Whether the comm models serve `task` under `comm` (throws for comm=neural that cannot). */
bool use_neural_comm(const NeuralWeights& w, const std::string& comm, const Task& task, const std::string& where) {
  if (comm == "link") return false;
  const bool fits = w.fw_comm && w.fw_comm->devices == task.topology.num_devices();
  if (comm == "auto") return fits;
  EMBSHARD_CHECK(w.fw_comm, "neural: ", where, " holds no comm models (comm=neural); use comm=link or auto");
  EMBSHARD_CHECK(fits, "neural: the comm models in ", where, " were trained for ", w.fw_comm->devices,
                 " devices but the task has ", task.topology.num_devices(), " (train on ", task.topology.num_devices(),
                 " ranks, or use comm=link)");
  return true;
}

std::unique_ptr<CostModel> build(const std::shared_ptr<const NeuralWeights>& weights, const Params& params,
                                 const Task& task, const Context& ctx) {
  const std::string& where = params.get_string("weights");
  EMBSHARD_CHECK(weights->compute, "neural: ", where, " holds no compute model");
  const bool neural_comm = use_neural_comm(*weights, params.get_string("comm"), task, where);
  if (params.get_string("hardware") == "match") {
    const std::string problem = hardware_mismatch(*weights, task, neural_comm);
    EMBSHARD_CHECK(problem.empty(), "neural: ", where, ": ", problem);
    warn_if_calibrated_elsewhere(weights->compute->training.fingerprint, "the neural models in " + where, ctx);
  }
  auto compute = std::make_unique<NeuralComputeModel>(weights, where, builtin_sim_hardware(task));
  const InputCommOptions input = input_comm_options(params);
  std::unique_ptr<CommModel> comm =
      neural_comm ? std::unique_ptr<CommModel>(std::make_unique<NeuralCommModel>(weights, where, input))
                  : make_link_comm_model(task.topology, weights->compute->training.batch_size, input);
  return std::make_unique<NeuralCostModel>(canonical_spec("neural", params), std::move(compute), std::move(comm));
}

}  // namespace

void register_neural_cost_model(CostModelRegistry& registry) {
  registry.add({"neural", "NeuroShard's neural compute and comm models from a weights file (cost/neural_cost.h)",
                neural_params()},
               [](const Params& params, const Context& ctx, const Task& task) {
                 return build(load_weights(params.get_string("weights")), params, task, ctx);
               });
}

bool builtin_weights_fit(const Task& task) {
  return !builtin_weights_text().empty() && hardware_mismatch(*load_weights("builtin"), task, false).empty();
}

}  // namespace embshard
