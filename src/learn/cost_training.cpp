// Training the neural cost models with libtorch (cost_training.h). The only translation unit
// of the project that includes torch headers.
#include "embshard/learn/cost_training.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/progress.h"
#include "embshard/core/sha256.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/pool.h"
#include "embshard/data/topology.h"
#include "embshard/plan/plan.h"
#include "embshard/profile/measure.h"
#include "learn/torch_nets.h"

namespace embshard {
namespace {

using learn::export_mlp;
using learn::make_sequential;
using learn::restore;
using learn::snapshot;

// ---- data split and accuracy --------------------------------------------------------------

struct Split {
  std::vector<std::int64_t> train, validation, test;
};

/** The sizes of the train / validation / test splits of `count` samples. */
struct SplitSizes {
  std::int64_t train = 0, validation = 0, test = 0;
};

SplitSizes split_sizes(std::int64_t count, const CostTrainOptions& o) {
  SplitSizes s;
  s.test = static_cast<std::int64_t>(std::llround(o.test_share * static_cast<double>(count)));
  s.validation = static_cast<std::int64_t>(std::llround(o.validation_share * static_cast<double>(count)));
  s.train = count - s.test - s.validation;
  return s;
}

Split split_samples(std::int64_t count, const CostTrainOptions& o) {
  torch::manual_seed(o.seed);
  const torch::Tensor order = torch::randperm(count, torch::kLong);
  const auto* p = order.data_ptr<std::int64_t>();
  const SplitSizes sizes = split_sizes(count, o);
  Split s;
  s.test.assign(p, p + sizes.test);
  s.validation.assign(p + sizes.test, p + sizes.test + sizes.validation);
  s.train.assign(p + sizes.test + sizes.validation, p + count);
  return s;
}

ModelAccuracy accuracy_of(const std::vector<HeldOutPoint>& points) {
  ModelAccuracy a;
  a.count = static_cast<std::int64_t>(points.size());
  if (points.empty()) return a;
  double mean = 0.0;
  for (const HeldOutPoint& p : points) mean += p.measured_ms / static_cast<double>(points.size());
  double sse = 0.0, sst = 0.0, ape = 0.0;
  std::int64_t positive = 0;
  for (const HeldOutPoint& p : points) {
    const double e = p.predicted_ms - p.measured_ms;
    sse += e * e;
    sst += (p.measured_ms - mean) * (p.measured_ms - mean);
    if (p.measured_ms > 0) {
      ape += std::abs(e) / p.measured_ms;
      ++positive;
    }
  }
  a.mse = sse / static_cast<double>(points.size());
  a.mape = positive > 0 ? ape / static_cast<double>(positive) : 0.0;
  a.r2 = sst > 0 ? 1.0 - sse / sst : 0.0;
  return a;
}

TrainingProvenance provenance_of(const std::string& path, const CostSampleFile& file, std::int64_t used,
                                 const CostTrainOptions& o) {
  TrainingProvenance t;
  t.samples_path = path;
  t.samples_sha256 = sha256_file_hex(path);
  t.num_samples = used;
  t.sampler = file.header.sampler;
  t.backend = file.header.backend;
  t.batch_size = file.header.batch_size;
  t.fingerprint = file.header.fingerprint;
  t.seed = o.seed;
  t.epochs = o.epochs;
  t.created_utc = utc_timestamp();
  t.embshard_version = embshard_version();
  return t;
}

/** A loss over a set of sample ids, and one optimiser step over a mini-batch of them. */
struct Trainer {
  std::function<torch::Tensor(const std::vector<std::int64_t>&)> loss;
  std::vector<torch::Tensor> parameters;
};

/** Adam over `epochs`, keeping the parameters with the best validation loss; returns that epoch. */
int fit(Trainer& t, const Split& split, const CostTrainOptions& o, const std::string& what, const Context& ctx) {
  torch::optim::Adam adam(t.parameters, torch::optim::AdamOptions(o.learning_rate));
  double best = std::numeric_limits<double>::infinity();
  int best_epoch = 0;
  std::vector<torch::Tensor> best_state = snapshot(t.parameters);
  std::vector<std::int64_t> order = split.train;
  Progress progress(ctx, "train " + what + ": epochs", o.epochs);
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const torch::Tensor perm = torch::randperm(static_cast<std::int64_t>(order.size()), torch::kLong);
    const auto* p = perm.data_ptr<std::int64_t>();
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = split.train[static_cast<std::size_t>(p[i])];
    for (std::size_t begin = 0; begin < order.size(); begin += static_cast<std::size_t>(o.batch_size)) {
      const std::size_t end = std::min(order.size(), begin + static_cast<std::size_t>(o.batch_size));
      adam.zero_grad();
      t.loss({order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end)})
          .backward();
      adam.step();
    }
    double validation = 0.0;
    {
      torch::NoGradGuard no_grad;
      validation = t.loss(split.validation).item<double>();
    }
    if (validation < best) {
      best = validation;
      best_epoch = epoch;
      best_state = snapshot(t.parameters);
    }
    if (epoch % 100 == 0) {
      ctx.debug(detail::concat("train ", what, ": epoch ", epoch, "/", o.epochs, ", validation MSE ", validation,
                               " (best ", best, " at epoch ", best_epoch, ")"));
    }
    progress.advance();
  }
  progress.finish(detail::concat("best validation MSE ", best, " ms² at epoch ", best_epoch));
  restore(t.parameters, best_state);
  return best_epoch;
}

// ---- compute model ---------------------------------------------------------------------------

struct ComputeData {
  torch::Tensor features;                       ///< [table rows, 20], z-scored
  std::vector<std::vector<std::int64_t>> rows;  ///< per sample: its rows of `features`
  torch::Tensor targets;                        ///< [samples, K]
};

Normaliser fit_table_normaliser(const Pool& pool, const CostSampleFile& file) {
  std::set<int> dims;
  for (const ComputeSample& s : file.compute) {
    for (const SampleTable& t : s.tables) dims.insert(t.dim);
  }
  std::vector<std::vector<double>> rows;
  for (const PoolTable& table : pool.tables()) {
    const TableStats stats = pool.expected_stats(table.id, file.header.batch_size);
    for (int dim : dims) {
      const TableFeatures f = table_features(stats, dim);
      rows.emplace_back(f.begin(), f.end());
    }
  }
  const auto& names = table_feature_names();
  return Normaliser::fit({names.begin(), names.end()}, rows);
}

ComputeData compute_data(const Pool& pool, const CostSampleFile& file, const Normaliser& norm, int outputs) {
  ComputeData data;
  std::vector<float> flat;
  std::map<std::pair<std::int64_t, int>, std::int64_t> row_of;
  std::vector<float> targets;
  for (const ComputeSample& s : file.compute) {
    std::vector<std::int64_t> rows;
    for (const SampleTable& t : s.tables) {
      auto [it, added] = row_of.emplace(std::make_pair(t.pool_id, t.dim), static_cast<std::int64_t>(row_of.size()));
      if (added) {
        TableFeatures f = table_features(pool.expected_stats(t.pool_id, file.header.batch_size), t.dim);
        norm.apply(f);
        flat.insert(flat.end(), f.begin(), f.end());
      }
      rows.push_back(it->second);
    }
    data.rows.push_back(std::move(rows));
    if (outputs == 2) {
      targets.push_back(static_cast<float>(s.fw_ms));
      targets.push_back(static_cast<float>(s.bw_ms));
    } else {
      targets.push_back(static_cast<float>(s.fw_ms + s.bw_ms));
    }
  }
  data.features =
      torch::from_blob(flat.data(), {static_cast<std::int64_t>(row_of.size()), kNumCostFeatures}, torch::kFloat)
          .clone();
  data.targets =
      torch::from_blob(targets.data(), {static_cast<std::int64_t>(file.compute.size()), outputs}, torch::kFloat)
          .clone();
  return data;
}

struct ComputeTorchNet {
  torch::nn::Sequential table_mlp = make_sequential(
      layer_widths(kNumCostFeatures, {compute_table_widths().front()}, compute_table_widths().back()), true);
  torch::nn::Sequential head;

  explicit ComputeTorchNet(int outputs)
      : head(make_sequential(layer_widths(compute_table_widths().back(), compute_head_widths(), outputs), false)) {}

  /** [samples, K] predictions for the given samples. */
  torch::Tensor forward(const ComputeData& d, const std::vector<std::int64_t>& samples) {
    std::vector<std::int64_t> rows, segment;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      for (std::int64_t r : d.rows[static_cast<std::size_t>(samples[i])]) {
        rows.push_back(r);
        segment.push_back(static_cast<std::int64_t>(i));
      }
    }
    const torch::Tensor x = d.features.index_select(0, torch::tensor(rows, torch::kLong));
    const torch::Tensor encoded = table_mlp->forward(x);
    const torch::Tensor summed = torch::zeros({static_cast<std::int64_t>(samples.size()), encoded.size(1)})
                                     .index_add(0, torch::tensor(segment, torch::kLong), encoded);
    return head->forward(summed);
  }

  std::vector<torch::Tensor> parameters() {
    std::vector<torch::Tensor> p = table_mlp->parameters();
    for (const torch::Tensor& h : head->parameters()) p.push_back(h);
    return p;
  }
};

double sum_of(const ComputePrediction& p) { return p.fw_ms + p.bw_ms; }

/** Test-split points for the model, the sum of singles and sim (cost_training.h). */
void record_compute_accuracy(const Pool& pool, const CostSampleFile& file, const std::vector<std::int64_t>& test,
                             TrainedCompute& out) {
  SimHardware sim = sim_hardware_for(make_topology("cpu:devices=1"));
  sim.cache_bytes = file.header.fingerprint.llc_bytes > 0 ? file.header.fingerprint.llc_bytes : sim.cache_bytes;
  std::vector<HeldOutPoint> singles, sim_points;
  for (std::int64_t id : test) {
    const ComputeSample& s = file.compute[static_cast<std::size_t>(id)];
    std::vector<float> summed(static_cast<std::size_t>(out.net.table_mlp.out()), 0.0f);
    double single_sum = 0.0;
    std::vector<SimTable> sim_tables;
    for (const SampleTable& t : s.tables) {
      const TableStats stats = pool.expected_stats(t.pool_id, file.header.batch_size);
      const std::vector<float> e = encode_table(out.net, table_features(stats, t.dim));
      for (std::size_t i = 0; i < e.size(); ++i) summed[i] += e[i];
      single_sum += sum_of(predict_from_encoding(out.net, e));
      SimTable st;
      st.stats = stats;
      st.cols = t.dim;
      sim_tables.push_back(std::move(st));
    }
    const double measured = s.fw_ms + s.bw_ms;
    out.test_points.push_back({measured, sum_of(predict_from_encoding(out.net, summed))});
    singles.push_back({measured, single_sum});
    const SimFeatures f = sim_features(sim_tables, file.header.batch_size, sim.cache_bytes);
    sim_points.push_back({measured, sim_pass_ms(sim.fw, f) + sim_pass_ms(sim.bw, f)});
  }
  out.net.training.accuracy["model"] = accuracy_of(out.test_points);
  out.net.training.accuracy["sum_of_singles"] = accuracy_of(singles);
  if (file.header.fingerprint.device_kind == "cpu") out.net.training.accuracy["sim"] = accuracy_of(sim_points);
}

// ---- comm models -----------------------------------------------------------------------------

struct CommData {
  torch::Tensor inputs;   ///< [samples, N or 2N], z-scored
  torch::Tensor targets;  ///< [samples, N]
};

std::vector<double> comm_inputs(const CommSample& s, bool forward) {
  std::vector<double> x(s.dim_sums.begin(), s.dim_sums.end());
  if (forward) x.insert(x.end(), s.sleep_ms.begin(), s.sleep_ms.end());
  return x;
}

CommData comm_data(const CostSampleFile& file, const Normaliser& norm, bool forward) {
  std::vector<float> inputs, targets;
  for (const CommSample& s : file.comm) {
    const std::vector<double> raw = comm_inputs(s, forward);
    std::vector<float> x(raw.begin(), raw.end());
    norm.apply(x);
    inputs.insert(inputs.end(), x.begin(), x.end());
    for (double t : forward ? s.fw_ms : s.bw_ms) targets.push_back(static_cast<float>(t));
  }
  const auto n = static_cast<std::int64_t>(file.comm.size());
  const auto width = static_cast<std::int64_t>(norm.names.size());
  return {torch::from_blob(inputs.data(), {n, width}, torch::kFloat).clone(),
          torch::from_blob(targets.data(),
                           {n, static_cast<std::int64_t>(targets.size()) / std::max<std::int64_t>(n, 1)}, torch::kFloat)
              .clone()};
}

CommNet train_comm(const std::string& path, const CostSampleFile& file, const Split& split, bool forward,
                   const CostTrainOptions& o, const Context& ctx, std::vector<HeldOutPoint>& points) {
  const int devices = static_cast<int>(file.comm.front().dim_sums.size());
  std::vector<std::vector<double>> train_rows;
  for (std::int64_t id : split.train)
    train_rows.push_back(comm_inputs(file.comm[static_cast<std::size_t>(id)], forward));
  CommNet net;
  net.forward = forward;
  net.devices = devices;
  net.inputs = Normaliser::fit(comm_input_names(forward, devices), train_rows);
  const CommData data = comm_data(file, net.inputs, forward);
  torch::manual_seed(o.seed + (forward ? 1 : 2));
  torch::nn::Sequential mlp =
      make_sequential(layer_widths(static_cast<int>(net.inputs.names.size()), comm_widths(), devices), false);
  Trainer t;
  t.parameters = mlp->parameters();
  t.loss = [&](const std::vector<std::int64_t>& ids) {
    const torch::Tensor index = torch::tensor(ids, torch::kLong);
    return torch::mse_loss(mlp->forward(data.inputs.index_select(0, index)), data.targets.index_select(0, index));
  };
  net.training = provenance_of(path, file, static_cast<std::int64_t>(file.comm.size()), o);
  net.training.best_epoch = fit(t, split, o, forward ? "fw_comm" : "bw_comm", ctx);
  net.mlp = export_mlp("mlp", mlp, false);
  // Test accuracy, beside the link model of a cpu topology plus the measured lateness.
  const Topology topology = make_topology(detail::concat("cpu:devices=", devices));
  std::vector<HeldOutPoint> link;
  for (std::int64_t id : split.test) {
    const CommSample& s = file.comm[static_cast<std::size_t>(id)];
    const std::vector<double> predicted = predict_comm(net, comm_inputs(s, forward));
    const std::vector<double> modelled = all_to_all_ms(topology, s.dim_sums, file.header.batch_size);
    const double latest = forward ? *std::max_element(s.sleep_ms.begin(), s.sleep_ms.end()) : 0.0;
    const std::vector<double>& measured = forward ? s.fw_ms : s.bw_ms;
    for (int d = 0; d < devices; ++d) {
      points.push_back({measured[static_cast<std::size_t>(d)], predicted[static_cast<std::size_t>(d)]});
      const double wait = forward ? latest - s.sleep_ms[static_cast<std::size_t>(d)] : 0.0;
      link.push_back({measured[static_cast<std::size_t>(d)], modelled[static_cast<std::size_t>(d)] + wait});
    }
  }
  net.training.accuracy["model"] = accuracy_of(points);
  net.training.accuracy["link"] = accuracy_of(link);
  return net;
}

void check_kind(const std::string& path, const CostSampleFile& file, SampleKind kind) {
  EMBSHARD_CHECK(file.header.kind == kind, "train: ", path, " holds ", to_string(file.header.kind),
                 " samples, expected ", to_string(kind));
}

void check_compute_tables(const std::string& path, const CostSampleFile& file) {
  const auto pool_tables = static_cast<std::int64_t>(Pool::generate(file.header.pool_seed).tables().size());
  for (const ComputeSample& s : file.compute) {
    EMBSHARD_CHECK(!s.tables.empty(), "train: ", path, ": sample ", s.index, " has no table");
    for (const SampleTable& t : s.tables) {
      EMBSHARD_CHECK(t.pool_id < pool_tables, "train: ", path, ": sample ", s.index, " names pool table ", t.pool_id,
                     ", but the pool of seed ", file.header.pool_seed, " has ", pool_tables, " tables");
    }
  }
}

void check_comm_devices(const std::string& path, const CostSampleFile& file) {
  const std::size_t devices = file.comm.front().dim_sums.size();
  for (const CommSample& s : file.comm) {
    EMBSHARD_CHECK(s.dim_sums.size() == devices, "train: ", path, ": sample ", s.index, " has ", s.dim_sums.size(),
                   " devices, sample 0 has ", devices, " (one model is for one device count)");
  }
}

}  // namespace

void check_training_samples(const std::string& path, const CostSampleFile& file, const CostTrainOptions& o) {
  const std::string problem = find_error_in_train_options(o);
  EMBSHARD_CHECK(problem.empty(), "train: ", problem);
  const auto count =
      static_cast<std::int64_t>(file.header.kind == SampleKind::kCompute ? file.compute.size() : file.comm.size());
  const SplitSizes sizes = split_sizes(count, o);
  EMBSHARD_CHECK(count >= 10 && sizes.train >= 2 && sizes.validation >= 1 && sizes.test >= 1, "train: ", path, ": ",
                 count, " ", to_string(file.header.kind),
                 " samples are too few to split 80/10/10 (at least 10; collect more with `embshard profile`)");
  if (file.header.kind == SampleKind::kCompute) {
    check_compute_tables(path, file);
  } else {
    check_comm_devices(path, file);
  }
}

std::string find_worse_than_baseline(const std::string& name, const TrainingProvenance& t) {
  const auto model = t.accuracy.find("model");
  if (model == t.accuracy.end()) return name + ": no held-out accuracy recorded";
  const ModelAccuracy& m = model->second;
  if (m.r2 < 0) {
    return detail::concat(name, ": held-out R² ", m.r2, " is below 0 (worse than predicting the mean)");
  }
  const auto singles = t.accuracy.find("sum_of_singles");
  if (singles != t.accuracy.end() && m.mse > singles->second.mse) {
    return detail::concat(name, ": held-out MSE ", m.mse, " ms² is above the sum-of-singles baseline's ",
                          singles->second.mse, " ms²");
  }
  return "";
}

std::string find_error_in_train_options(const CostTrainOptions& o) {
  if (o.epochs < 1) return "epochs must be at least 1";
  if (o.batch_size < 1) return "batch size must be at least 1";
  if (!(o.learning_rate > 0)) return "learning rate must be positive";
  if (!(o.validation_share > 0 && o.test_share > 0 && o.validation_share + o.test_share < 0.9)) {
    return "validation and test shares must be positive and leave at least 10% for training";
  }
  if (o.compute_outputs != 1 && o.compute_outputs != 2) return "compute outputs must be 1 (fw+bw) or 2 (fw, bw)";
  return "";
}

TrainedCompute train_compute_model(const std::string& path, const CostSampleFile& file, const CostTrainOptions& o,
                                   const Context& ctx) {
  check_kind(path, file, SampleKind::kCompute);
  check_training_samples(path, file, o);
  torch::set_num_threads(1);
  const Pool pool = Pool::generate(file.header.pool_seed);
  const Split split = split_samples(static_cast<std::int64_t>(file.compute.size()), o);
  TrainedCompute out;
  out.net.inputs = fit_table_normaliser(pool, file);
  out.net.outputs =
      o.compute_outputs == 2 ? std::vector<std::string>{"fw_ms", "bw_ms"} : std::vector<std::string>{"comp_ms"};
  double fw = 0.0, total = 0.0;
  for (std::int64_t id : split.train) {
    fw += file.compute[static_cast<std::size_t>(id)].fw_ms;
    total += file.compute[static_cast<std::size_t>(id)].fw_ms + file.compute[static_cast<std::size_t>(id)].bw_ms;
  }
  out.net.fw_share = total > 0 ? fw / total : 0.5;
  const ComputeData data = compute_data(pool, file, out.net.inputs, o.compute_outputs);
  torch::manual_seed(o.seed);
  ComputeTorchNet net(o.compute_outputs);
  Trainer t;
  t.parameters = net.parameters();
  t.loss = [&](const std::vector<std::int64_t>& ids) {
    return torch::mse_loss(net.forward(data, ids), data.targets.index_select(0, torch::tensor(ids, torch::kLong)));
  };
  out.net.training = provenance_of(path, file, static_cast<std::int64_t>(file.compute.size()), o);
  out.net.training.best_epoch = fit(t, split, o, "compute", ctx);
  out.net.table_mlp = export_mlp("table_mlp", net.table_mlp, true);
  out.net.head = export_mlp("head", net.head, false);
  record_compute_accuracy(pool, file, split.test, out);
  return out;
}

TrainedComm train_comm_models(const std::string& path, const CostSampleFile& file, const CostTrainOptions& o,
                              const Context& ctx) {
  check_kind(path, file, SampleKind::kComm);
  check_training_samples(path, file, o);
  torch::set_num_threads(1);
  const Split split = split_samples(static_cast<std::int64_t>(file.comm.size()), o);
  TrainedComm out;
  out.forward = train_comm(path, file, split, true, o, ctx, out.forward_points);
  out.backward = train_comm(path, file, split, false, o, ctx, out.backward_points);
  return out;
}

}  // namespace embshard
