// Fitting the sim judge of a GPU preset to the papers' published figures (paper_calibration.h).
#include "embshard/eval/paper_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "core/json_reader.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/nnls.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/topology.h"
#include "embshard/eval/task_gen.h"
#include "embshard/shard/sharder.h"

namespace embshard {
namespace {

using Json = nlohmann::json;

/** Parameters: the seven compute features without uvm, then latency (ms) and ms per byte. */
constexpr int kComputeParams = kSimUvmBytes;
constexpr int kLatency = kComputeParams;
constexpr int kMsPerByte = kComputeParams + 1;
constexpr int kNumParams = kComputeParams + 2;
/** A row's known part: the features charged at fixed rates (θ[kFixed] is always 1). */
constexpr int kFixed = kNumParams;
using Vec = std::array<double, kNumParams + 1>;

double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/** One device of one task: its cost is dot(x, θ). */
using DeviceRows = std::vector<Vec>;
/** The devices of every task a figure averages over. */
using FigureTasks = std::vector<DeviceRows>;

PaperFigure parse_figure(const detail::JsonNode& node) {
  node.expect_object();
  PaperFigure f;
  f.kind = node.at("kind").as_string();
  if (f.kind == "protocol_mean") {
    node.only_keys({"id", "kind", "protocol", "sharder", "published_ms", "role", "source"});
  } else if (f.kind == "all_to_all") {
    node.only_keys({"id", "kind", "batch_size", "dim_sums", "published_ms", "role", "source"});
  } else if (f.kind == "fusion_speedup") {
    node.only_keys({"id", "kind", "protocol", "published_ms", "role", "source"});
  } else {
    node.at("kind").fail("'" + f.kind + "' is not one of protocol_mean, all_to_all, fusion_speedup");
  }
  f.id = node.at("id").as_string();
  f.source = node.at("source").as_string();
  const std::string role = node.at("role").as_string();
  if (role != "fit" && role != "held_out") node.at("role").fail("'" + role + "' must be fit or held_out");
  f.fit = role == "fit";
  f.published_ms = node.at("published_ms").as_double(0.0);
  if (!(f.published_ms > 0)) node.at("published_ms").fail("must be positive");
  if (f.kind == "all_to_all") {
    f.batch_size = node.at("batch_size").as_int(1, std::int64_t{1} << 30);
    const detail::JsonNode dims = node.at("dim_sums");
    dims.expect_array(2);
    for (std::size_t d = 0; d < dims.size(); ++d) f.dim_sums.push_back(dims.at(d).as_int(0, 1 << 24));
    return f;
  }
  f.protocol = node.at("protocol").as_string();
  if (f.protocol.find("preset=") != std::string::npos) {
    node.at("protocol").fail("must not name a preset (the file's preset is used)");
  }
  if (f.kind == "protocol_mean") {
    f.sharder = node.at("sharder").as_string();
  } else {
    if (!f.fit) node.at("role").fail("a fusion_speedup figure sets the per-call cost and must have role 'fit'");
    if (!(f.published_ms > 1.0)) node.at("published_ms").fail("a fusion_speedup is the speedup and must exceed 1");
  }
  return f;
}

/** What the fit charges for a compute feature: a fitted coefficient, or a fixed rate (ms per unit). */
struct FitForm {
  FittedFeatures fitted{};
  SimCoefficients fixed{};  ///< forward + backward, for the features not fitted
};

/**
 * The row of one device: the fitted compute features (forward and backward together), the others
 * at their fixed rates, and both all-to-alls.
 */
Vec device_row(const SimFeatures& features, const FitForm& form, double a2a_bytes, int all_to_alls) {
  Vec x{};
  for (int i = 0; i < kNumSimFeatures; ++i) {
    if (i < kComputeParams && form.fitted[i]) {
      x[i] = features[i];
    } else {
      x[kFixed] += form.fixed[i] * features[i];
    }
  }
  x[kLatency] = all_to_alls;
  x[kMsPerByte] = all_to_alls * a2a_bytes;
  return x;
}

/** Per device, the bytes the link model charges: max(send, recv) over either link. */
std::vector<double> a2a_bytes(const Topology& topology, const std::vector<std::int64_t>& dim_sums, std::int64_t batch) {
  std::vector<double> bytes;
  for (const LinkVolume& v : all_to_all_volumes(topology, dim_sums, batch)) {
    bytes.push_back(static_cast<double>(
        std::max({v.send_intra_bytes, v.recv_intra_bytes, v.send_inter_bytes, v.recv_inter_bytes})));
  }
  return bytes;
}

/** Generated tasks by protocol spec: figures of one setting share them. */
using TaskCache = std::map<std::string, std::vector<Task>>;

/** The first `count` tasks of `protocol` on `preset` with `seed`, generated once per spec. */
const std::vector<Task>& protocol_tasks(const std::string& protocol, const std::string& preset, int count,
                                        std::uint64_t seed, TaskCache& cache) {
  const std::string spec = protocol + (protocol.find(':') == std::string::npos ? ":" : ",") + "preset=" + preset;
  auto [it, fresh] = cache.try_emplace(spec);
  if (fresh) {
    const auto gen = make_task_generator(spec);
    const TableSource source = TableSource::from_pool(0, gen->batch_size());
    for (int i = 0; i < count; ++i) it->second.push_back(gen->generate(source, seed, i));
  }
  return it->second;
}

/** The protocol's tasks on `preset`, planned by the sharder: their device rows. */
FigureTasks protocol_rows(const PaperFigure& f, const FitForm& form, const std::string& preset, int count,
                          std::uint64_t seed, TaskCache& task_cache, const Context& ctx) {
  FigureTasks rows;
  for (const Task& task : protocol_tasks(f.protocol, preset, count, seed, task_cache)) {
    const ShardResult r = plan_task(f.sharder, task, nullptr, ctx);
    if (r.status != ShardStatus::kOk) continue;
    const auto by_device = shards_by_device(task, r.plan);
    const std::int64_t l2 = sim_roofline(task.topology).cache_bytes;
    const std::vector<double> bytes = a2a_bytes(task.topology, device_dim_sums(by_device), task.workload.batch_size);
    DeviceRows devices;
    for (std::size_t d = 0; d < by_device.size(); ++d) {
      devices.push_back(device_row(sim_device_features(task, by_device[d], l2), form, bytes[d], 2));
    }
    rows.push_back(std::move(devices));
  }
  return rows;
}

FigureTasks all_to_all_rows(const PaperFigure& f, const std::string& preset) {
  const int n = static_cast<int>(f.dim_sums.size());
  const Topology t = make_topology(preset + ":nodes=1,gpus_per_node=" + std::to_string(n));
  const std::vector<double> bytes = a2a_bytes(t, f.dim_sums, f.batch_size);
  DeviceRows devices;
  for (int d = 0; d < n; ++d) devices.push_back(device_row(SimFeatures{}, FitForm{}, bytes[d], 1));
  return {devices};
}

/** Mean over tasks of the slowest device's cost, and the mean row of those slowest devices. */
std::pair<double, Vec> mean_of_maxima(const FigureTasks& tasks, const Vec& theta) {
  Vec mean_row{};
  double mean = 0.0;
  for (const DeviceRows& devices : tasks) {
    std::size_t slowest = 0;
    for (std::size_t d = 1; d < devices.size(); ++d) {
      if (dot(devices[d], theta) > dot(devices[slowest], theta)) slowest = d;
    }
    mean += dot(devices[slowest], theta);
    for (std::size_t i = 0; i < mean_row.size(); ++i) mean_row[i] += devices[slowest][i];
  }
  const double n = std::max<double>(1.0, static_cast<double>(tasks.size()));
  for (double& v : mean_row) v /= n;
  return {mean / n, mean_row};
}

/** One task of a fusion figure: its tables each in a call of their own (rows summed), and in one call. */
struct FusionTask {
  Vec singles{};
  Vec fused{};
};

std::vector<FusionTask> fusion_tasks(const std::vector<Task>& tasks, const FitForm& form, std::int64_t l2) {
  std::vector<FusionTask> out;
  for (const Task& task : tasks) {
    FusionTask f;
    std::vector<PlacedShard> shards;
    for (std::size_t t = 0; t < task.workload.tables.size(); ++t) {
      const TableSpec& spec = task.workload.tables[t];
      shards.push_back({static_cast<int>(t), Shard{0, 0, spec.num_rows(), 0, spec.dim, -1}});
      const Vec single =
          device_row(sim_device_features(task, std::span<const PlacedShard>(&shards.back(), 1), l2), form, 0, 0);
      for (std::size_t i = 0; i < single.size(); ++i) f.singles[i] += single[i];
    }
    f.fused = device_row(sim_device_features(task, shards, l2), form, 0.0, 0);
    out.push_back(f);
  }
  return out;
}

/** The mean over tasks of (each table in its own call) / (all tables in one call) under θ. */
double mean_fusion_speedup(const std::vector<FusionTask>& tasks, const Vec& theta) {
  double sum = 0.0;
  for (const FusionTask& f : tasks) sum += dot(f.singles, theta) / std::max(dot(f.fused, theta), 1e-30);
  return sum / static_cast<double>(std::max<std::size_t>(tasks.size(), 1));
}

/**
 * A published speedup s as a relation the fit holds: Σ singles · θ − s · Σ fused · θ = 0, scaled
 * by s · Σ fused · θ under the current θ so that its residual weighs as a figure's relative error.
 */
NnlsRow fusion_relation(const std::vector<FusionTask>& tasks, double speedup, const Vec& theta) {
  Vec singles{}, fused{};
  for (const FusionTask& f : tasks) {
    for (std::size_t i = 0; i < singles.size(); ++i) {
      singles[i] += f.singles[i];
      fused[i] += f.fused[i];
    }
  }
  const double scale = std::max(speedup * dot(fused, theta), 1e-30);
  NnlsRow row;
  for (int i = 0; i < kNumParams; ++i) row.features.push_back((singles[i] - speedup * fused[i]) / scale);
  row.constant = (singles[kFixed] - speedup * fused[kFixed]) / scale;
  return row;
}

/**
 * θ of the data-sheet roofline: where the fit starts. The link starts at the device's PCIe
 * bandwidth and a 25 µs floor, not at the preset's all-to-all (which a previous fit may have set),
 * so the fit does not depend on the constants it produced.
 */
Vec roofline_theta(const SimHardware& roofline, const FitForm& form, const Topology& topology) {
  Vec theta{};
  for (int i = 0; i < kComputeParams; ++i) theta[i] = form.fitted[i] ? roofline.fw[i] + roofline.bw[i] : 0.0;
  theta[kFixed] = 1.0;
  theta[kLatency] = 0.025;
  theta[kMsPerByte] = 1.0 / (topology.devices.front().uvm_gbps * 1e6);
  return theta;
}

}  // namespace

PaperFigures read_paper_figures(const std::string& path) {
  const Json document = detail::parse_json(read_file(path), path);
  const detail::JsonNode root(document, path);
  root.expect_object();
  root.only_keys({"preset", "source", "features", "backward_to_forward", "figures"});
  PaperFigures figures;
  figures.preset = root.at("preset").as_string();
  figures.source = root.at("source").as_string();
  const detail::JsonNode split = root.at("backward_to_forward");
  split.expect_object();
  split.only_keys({"ratio", "source"});
  figures.backward_to_forward = split.at("ratio").as_double(0.0);
  if (!(figures.backward_to_forward > 0)) split.at("ratio").fail("must be positive");
  figures.split_source = split.at("source").as_string();
  const detail::JsonNode features = root.at("features");
  features.expect_array(1);
  for (std::size_t k = 0; k < features.size(); ++k) {
    const std::string name = features.at(k).as_string();
    const auto& names = sim_feature_names();
    const auto at = std::find(names.begin(), names.begin() + kComputeParams, name);
    // update_bytes: only the backward has it, so no forward/backward split can hold for it
    if (at == names.begin() + kComputeParams || at == names.begin() + kSimUpdateBytes) {
      features.at(k).fail("'" + name + "' is not a feature both passes have (calls, tables, lookups, miss_bytes, " +
                          "hit_bytes, output_bytes)");
    }
    figures.fitted[static_cast<std::size_t>(at - names.begin())] = true;
  }
  try {
    const Topology t = make_topology(figures.preset);
    EMBSHARD_CHECK(t.device_kind != "cpu", "the cpu preset is calibrated by `profile calibrate --samples`");
  } catch (const Error& e) {
    root.at("preset").fail(e.what());
  }
  const detail::JsonNode list = root.at("figures");
  list.expect_array(1);
  for (std::size_t i = 0; i < list.size(); ++i) figures.figures.push_back(parse_figure(list.at(i)));
  const auto fits = std::count_if(figures.figures.begin(), figures.figures.end(),
                                  [](const PaperFigure& f) { return f.fit && f.kind != "fusion_speedup"; });
  if (fits < kNumParams) {
    list.fail(detail::concat(fits, " figures have role 'fit'; the fit needs at least ", kNumParams));
  }
  return figures;
}

PaperFit fit_to_papers(const PaperFigures& figures, int tasks_per_setting, std::uint64_t seed, const Context& ctx) {
  EMBSHARD_CHECK(tasks_per_setting >= 1, "paper fit: tasks per setting must be at least 1");
  const Topology preset = make_topology(figures.preset);
  const SimHardware roofline = sim_roofline(preset);
  TaskCache task_cache;
  // Not fitted: the update's traffic and UVM reads at the data sheet's rates; the rest nothing.
  FitForm form;
  form.fitted = figures.fitted;
  SimHardware charged;  // what the judge charges for what is not fitted
  for (const int i : {kSimUpdateBytes, kSimUvmBytes}) {
    charged.fw[i] = roofline.fw[i];
    charged.bw[i] = roofline.bw[i];
    form.fixed[i] = roofline.fw[i] + roofline.bw[i];
  }
  std::vector<FigureTasks> rows;
  std::vector<std::vector<FusionTask>> fusions(figures.figures.size());
  for (const PaperFigure& f : figures.figures) {
    if (f.kind == "fusion_speedup") {
      const auto& tasks = protocol_tasks(f.protocol, figures.preset, tasks_per_setting, seed, task_cache);
      fusions[rows.size()] = fusion_tasks(tasks, form, roofline.cache_bytes);
      rows.emplace_back();
      continue;
    }
    rows.push_back(f.kind == "all_to_all"
                       ? all_to_all_rows(f, figures.preset)
                       : protocol_rows(f, form, figures.preset, tasks_per_setting, seed, task_cache, ctx));
    EMBSHARD_CHECK(!rows.back().empty(), "paper fit: '", f.sharder, "' planned none of the tasks of figure '", f.id,
                   "'");
  }
  Vec theta = roofline_theta(roofline, form, preset);
  PaperFit fit;
  // The slowest devices under θ can flip back and forth between rounds: keep the θ whose real
  // predictions (means of maxima, speedups) fit best. A fusion figure separates a device's call
  // cost from its per-table cost and the all-to-all latency, which the totals alone cannot.
  const auto loss_of = [&](const Vec& t) {
    double loss = 0.0;
    for (std::size_t k = 0; k < figures.figures.size(); ++k) {
      const PaperFigure& f = figures.figures[k];
      if (!f.fit) continue;
      const double judged =
          f.kind == "fusion_speedup" ? mean_fusion_speedup(fusions[k], t) : mean_of_maxima(rows[k], t).first;
      loss += std::pow(judged / f.published_ms - 1.0, 2);
    }
    return loss;
  };
  Vec best = theta;
  double best_loss = std::numeric_limits<double>::infinity();
  for (fit.iterations = 1; fit.iterations <= 100; ++fit.iterations) {
    std::vector<NnlsRow> fitted_rows, relations;
    for (std::size_t k = 0; k < figures.figures.size(); ++k) {
      const PaperFigure& f = figures.figures[k];
      if (!f.fit) continue;
      if (f.kind == "fusion_speedup") {
        relations.push_back(fusion_relation(fusions[k], f.published_ms, theta));
        continue;
      }
      const Vec row = mean_of_maxima(rows[k], theta).second;
      fitted_rows.push_back({std::vector<double>(row.begin(), row.begin() + kNumParams), row[kFixed], f.published_ms});
    }
    if (const double loss = loss_of(theta); loss < best_loss) {
      best_loss = loss;
      best = theta;
    }
    const std::vector<double> solved = relative_nnls(fitted_rows, relations);
    Vec next{};
    std::copy(solved.begin(), solved.end(), next.begin());
    next[kFixed] = 1.0;
    double change = 0.0;
    for (int i = 0; i < kNumParams; ++i)
      change = std::max(change, std::abs(next[i] - theta[i]) / std::max(std::abs(theta[i]), 1e-30));
    theta = next;
    if (change < 1e-9) break;
  }
  if (loss_of(theta) > best_loss) theta = best;  // the last round's θ has not been scored yet
  fit.hardware.name = figures.preset + " fitted to " + figures.source;
  fit.hardware.calibrated = true;
  fit.hardware.cache_bytes = roofline.cache_bytes;
  // Every fitted term is split forward : backward = 1 : ratio, the published evidence's (the
  // figures are totals and cannot tell the passes apart).
  fit.backward_to_forward = figures.backward_to_forward;
  fit.split_source = figures.split_source;
  const double fw_share = 1.0 / (1.0 + figures.backward_to_forward);
  for (int i = 0; i < kNumSimFeatures; ++i) {
    const bool fitted = i < kComputeParams && form.fitted[i];
    fit.hardware.fw[i] = fitted ? theta[i] * fw_share : charged.fw[i];
    fit.hardware.bw[i] = fitted ? theta[i] - theta[i] * fw_share : charged.bw[i];
  }
  fit.a2a_latency_us = theta[kLatency] * 1000.0;
  fit.a2a_gbps = theta[kMsPerByte] > 0 ? 1.0 / (theta[kMsPerByte] * 1e6) : 0.0;
  fit.tasks_per_setting = tasks_per_setting;
  fit.seed = seed;
  for (std::size_t k = 0; k < figures.figures.size(); ++k) {
    const bool fusion = figures.figures[k].kind == "fusion_speedup";
    fit.rows.push_back({figures.figures[k],
                        fusion ? mean_fusion_speedup(fusions[k], theta) : mean_of_maxima(rows[k], theta).first,
                        fusion ? tasks_per_setting : static_cast<int>(rows[k].size())});
  }
  return fit;
}

std::string paper_fit_markdown(const PaperFit& fit) {
  std::ostringstream out;
  char line[400];
  out << "Fitted on " << fit.tasks_per_setting << " tasks per setting (seed " << fit.seed << "), " << fit.iterations
      << " rounds. All-to-all: latency " << fit.a2a_latency_us << " µs, " << fit.a2a_gbps
      << " GB/s per device and direction; L2 " << fit.hardware.cache_bytes
      << " bytes. Every compute term's backward is " << fit.backward_to_forward << "× its forward (" << fit.split_source
      << ").\n\n";
  out << "| feature | forward ms per unit | backward ms per unit |\n|---|---:|---:|\n";
  for (int i = 0; i < kNumSimFeatures; ++i) {
    std::snprintf(line, sizeof line, "| %s | %.4g | %.4g |\n", sim_feature_names()[i], fit.hardware.fw[i],
                  fit.hardware.bw[i]);
    out << line;
  }
  out << "\n| figure | source | role | published ms | judged ms | error |\n|---|---|---|---:|---:|---:|\n";
  out << "";  // fusion_speedup rows give the speedup (×), not milliseconds
  for (const PaperFit::Row& r : fit.rows) {
    const double error = r.judged_ms / r.figure.published_ms - 1.0;
    std::snprintf(line, sizeof line, "| %s | %s | %s | %.2f | %.2f | %+.1f%% |\n", r.figure.id.c_str(),
                  r.figure.source.c_str(), r.figure.fit ? "fit" : "held out", r.figure.published_ms, r.judged_ms,
                  100.0 * error);
    out << line;
  }
  for (const bool fitted : {true, false}) {
    std::vector<double> errors;
    for (const PaperFit::Row& r : fit.rows) {
      if (r.figure.fit == fitted) errors.push_back(std::abs(r.judged_ms / r.figure.published_ms - 1.0));
    }
    if (errors.empty()) continue;
    std::sort(errors.begin(), errors.end());
    std::snprintf(
        line, sizeof line, "\n%s figures: %zu, |error| median %.1f%%, max %.1f%%, within 10%%: %zu\n",
        fitted ? "Fit" : "Held-out", errors.size(), 100.0 * errors[errors.size() / 2], 100.0 * errors.back(),
        static_cast<std::size_t>(std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.10; })));
    out << line;
  }
  return out.str();
}

}  // namespace embshard
