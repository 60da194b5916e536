#include "embshard/eval/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/data/pool.h"
#include "embshard/data/topology.h"

namespace embshard {
namespace {

using Json = nlohmann::json;

SimFeatures features_of(const Pool& pool, const ComputeSample& sample, std::int64_t batch_size,
                        std::int64_t cache_bytes) {
  std::vector<SimTable> tables;
  for (const SampleTable& t : sample.tables) {
    SimTable table;
    table.stats = pool.expected_stats(t.pool_id, batch_size);
    table.cols = t.dim;
    tables.push_back(std::move(table));
  }
  return sim_features(tables, batch_size, cache_bytes);
}

RelativeErrors relative_errors(const SimCoefficients& c, const std::vector<SimFeatures>& features,
                               const std::vector<double>& measured) {
  std::vector<double> errors;
  for (std::size_t i = 0; i < features.size(); ++i) {
    if (measured[i] > 0) errors.push_back(std::abs(sim_pass_ms(c, features[i]) - measured[i]) / measured[i]);
  }
  RelativeErrors r;
  r.count = static_cast<std::int64_t>(errors.size());
  if (errors.empty()) return r;
  std::sort(errors.begin(), errors.end());
  r.median = errors[errors.size() / 2];
  r.p90 = errors[std::min(errors.size() - 1, errors.size() * 9 / 10)];
  for (double e : errors) r.mean += e / static_cast<double>(errors.size());
  return r;
}

std::vector<HeldOutPoint> held_out_points(const SimCoefficients& c, const std::vector<SimFeatures>& features,
                                          const std::vector<double>& measured) {
  std::vector<HeldOutPoint> points;
  for (std::size_t i = 0; i < features.size(); ++i) points.push_back({measured[i], sim_pass_ms(c, features[i])});
  return points;
}

Json errors_json(const RelativeErrors& e) {
  return {{"median", e.median}, {"mean", e.mean}, {"p90", e.p90}, {"count", e.count}};
}

}  // namespace

namespace {

/** "" when `b` may be fitted together with `a` (same kernels, batch, pool and device), else why not. */
std::string find_mismatch(const CostSampleHeader& a, const CostSampleHeader& b) {
  if (b.kind != SampleKind::kCompute) return "it is not a compute sample file";
  if (b.backend != a.backend) return detail::concat("backend ", b.backend, " vs ", a.backend);
  if (b.batch_size != a.batch_size) return detail::concat("batch ", b.batch_size, " vs ", a.batch_size);
  if (b.pool_seed != a.pool_seed) return detail::concat("pool seed ", b.pool_seed, " vs ", a.pool_seed);
  if (b.precision != a.precision) return detail::concat("precision ", b.precision, " vs ", a.precision);
  if (b.fingerprint.device_kind != a.fingerprint.device_kind || b.fingerprint.cpu_model != a.fingerprint.cpu_model)
    return detail::concat("measured on '", b.fingerprint.device_kind, "' / '", b.fingerprint.cpu_model, "' vs '",
                          a.fingerprint.device_kind, "' / '", a.fingerprint.cpu_model, "'");
  return "";
}

}  // namespace

SimCalibration calibrate_sim(const std::vector<CostSampleFile>& files, int test_every, const Context& ctx,
                             const std::vector<std::string>& paths) {
  EMBSHARD_CHECK(!files.empty(), "calibrate: no sample file");
  const auto name = [&](std::size_t i) { return i < paths.size() ? paths[i] : detail::concat("sample file ", i + 1); };
  EMBSHARD_CHECK(files[0].header.kind == SampleKind::kCompute, name(0), ": calibrate needs a compute sample file");
  EMBSHARD_CHECK(test_every >= 2, "calibrate: test_every must be at least 2");
  const CostSampleHeader& header = files[0].header;
  for (std::size_t i = 1; i < files.size(); ++i) {
    const std::string why = find_mismatch(header, files[i].header);
    EMBSHARD_CHECK(why.empty(), name(i), ": cannot be fitted with ", name(0), ": ", why);
  }
  SimCalibration c;
  const bool gpu = header.backend == "cuda";
  // GPU samples: the preset of the GPU they ran on, whose data-sheet L2 the sim model uses.
  const Topology topology = make_topology(gpu ? preset_for_gpu(header.fingerprint.device_kind) : "cpu");
  const std::int64_t cache = gpu ? sim_roofline(topology).cache_bytes : header.fingerprint.llc_bytes;
  c.device_kind = topology.device_kind;
  const Pool pool = Pool::generate(header.pool_seed);
  struct Split {
    std::vector<SimFeatures> features;
    std::vector<double> fw, bw;
  } train, test;
  for (const CostSampleFile& file : files) {
    for (const ComputeSample& s : file.compute) {
      Split& split = s.index % test_every == 0 ? test : train;
      split.features.push_back(features_of(pool, s, header.batch_size, cache));
      split.fw.push_back(s.fw_ms);
      split.bw.push_back(s.bw_ms);
    }
  }
  EMBSHARD_CHECK(train.features.size() >= 10, paths.empty() ? std::string("calibrate") : name(0),
                 ": needs at least 10 training samples, ", files.size() == 1 ? "the file has " : "the files have ",
                 train.features.size(), " (collect more with embshard profile compute)");
  const std::string machine =
      detail::concat(header.fingerprint.cpu_model, " (", header.fingerprint.llc_bytes >> 20, " MiB last-level cache)");
  c.hardware.name = gpu ? detail::concat(header.fingerprint.device_kind, " calibrated on this project's cuda backend")
                    : header.backend == kTorchrecCpuBackend
                        ? detail::concat("TorchRec's CPU runtime calibrated on ", machine)
                        : detail::concat("cpu calibrated on ", machine);
  c.backend = header.backend;
  c.hardware.calibrated = true;
  c.hardware.calibrated_on = header.fingerprint;
  c.hardware.cache_bytes = cache;
  c.hardware.fw = fit_sim_coefficients(train.features, train.fw);
  c.hardware.bw = fit_sim_coefficients(train.features, train.bw);
  c.fw_train = relative_errors(c.hardware.fw, train.features, train.fw);
  c.bw_train = relative_errors(c.hardware.bw, train.features, train.bw);
  c.fw_test = relative_errors(c.hardware.fw, test.features, test.fw);
  c.bw_test = relative_errors(c.hardware.bw, test.features, test.bw);
  c.fw_test_points = held_out_points(c.hardware.fw, test.features, test.fw);
  c.bw_test_points = held_out_points(c.hardware.bw, test.features, test.bw);
  for (std::size_t i = 0; i < paths.size(); ++i) c.samples_path += (i ? "," : "") + paths[i];
  c.batch_size = header.batch_size;
  ctx.info(detail::concat("calibrate: ", train.features.size(), " training and ", test.features.size(),
                          " held-out samples"));
  return c;
}

std::string sim_calibration_json(const SimCalibration& c) {
  Json doc = Json::parse(sim_hardware_json(c.hardware, c.device_kind));  // the preset file `sim:coefficients=` loads
  doc["train_relative_error"] = {{"fw", errors_json(c.fw_train)}, {"bw", errors_json(c.bw_train)}};
  doc["test_relative_error"] = {{"fw", errors_json(c.fw_test)}, {"bw", errors_json(c.bw_test)}};
  return doc.dump(2) + "\n";
}

std::string sim_calibration_text(const SimCalibration& c) {
  std::ostringstream out;
  out << "sim model calibrated: " << c.hardware.name << ", cache " << c.hardware.cache_bytes / (1 << 20)
      << " MiB, batch " << c.batch_size << "\n"
      << "relative error |model - measured| / measured:\n"
      << "  pass      set        n  median    mean     p90\n";
  const auto row = [&out](const char* pass, const char* set, const RelativeErrors& e) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-8s  %-8s %4lld  %5.1f%%  %5.1f%%  %5.1f%%\n", pass, set,
                  static_cast<long long>(e.count), 100 * e.median, 100 * e.mean, 100 * e.p90);
    out << line;
  };
  row("forward", "train", c.fw_train);
  row("forward", "held out", c.fw_test);
  row("backward", "train", c.bw_train);
  row("backward", "held out", c.bw_test);
  out << "coefficients (ms per unit; zero ones left out):\n";
  for (int i = 0; i < kNumSimFeatures; ++i) {
    if (c.hardware.fw[i] == 0.0 && c.hardware.bw[i] == 0.0) continue;
    char line[128];
    std::snprintf(line, sizeof line, "  %-28s fw %-10.4g bw %.4g\n", sim_feature_names()[i], c.hardware.fw[i],
                  c.hardware.bw[i]);
    out << line;
  }
  return out.str();
}

}  // namespace embshard
