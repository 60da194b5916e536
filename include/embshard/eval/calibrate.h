#pragma once
/**
 * @file calibrate.h
 * @brief Fits the `sim` model's coefficients to measured compute samples and reports how far the
 *        fitted model is from measurements it did not see.
 *
 * Each compute sample (profile/cost_sample.h) is a fused shard of pool tables at the file's
 * batch; its features come from the pool's expected statistics at that batch (cost/analytic.h)
 * with the measuring machine's last-level cache. Samples are split deterministically: every
 * sample whose index is ≡ 0 mod `test_every` is held out; the rest fit the forward and backward
 * coefficients (non-negative, relative error). Errors are |model − measured| / measured.
 * Several files (other seeds of the same experiment) are fitted together, each split alike.
 * GPU samples (backend cuda) are fitted for the topology preset of the GPU named in their
 * fingerprint (`preset_for_gpu`), with that preset's data-sheet L2 as the cache — the cache the
 * sim model uses when it judges that preset's tasks; the result loads as that preset's
 * `sim:coefficients=` file. Samples of backend `torchrec_cpu` (embshard.torchrec.profile: each a
 * rank's lookups and their backward on TorchRec's CPU runtime) are fitted like the `cpu` kernels'
 * and load as a `sim:coefficients=` file for `cpu` tasks: a judge of that runtime, never this
 * machine's installed calibration.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/neural_weights.h"
#include "embshard/profile/cost_sample.h"

namespace embshard {

struct RelativeErrors {
  double median = 0.0;
  double mean = 0.0;
  double p90 = 0.0;
  std::int64_t count = 0;
};

/** The backend name of compute samples measured on TorchRec's CPU runtime (file comment). */
inline constexpr const char* kTorchrecCpuBackend = "torchrec_cpu";

struct SimCalibration {
  SimHardware hardware;
  std::string backend;  ///< the samples' backend: "cpu" (the kernels), "cuda" or kTorchrecCpuBackend
  RelativeErrors fw_train, bw_train;
  RelativeErrors fw_test, bw_test;
  std::vector<HeldOutPoint> fw_test_points, bw_test_points;  ///< per held-out sample
  std::string device_kind;      ///< the topology device kind the coefficients are for ("cpu", "H200-SXM-141GB")
  std::string samples_path;     ///< the files calibrated on, as named, comma-separated (provenance)
  std::int64_t batch_size = 0;  ///< the samples' batch
};

/**
 * Fits and evaluates (file comment); needs at least 10 training samples in all. Files that differ
 * in kind, backend, batch, pool seed, precision or the machine they were measured on are an Error
 * naming the file and the field. `paths` name the files in errors and in the result's provenance.
 */
[[nodiscard]] SimCalibration calibrate_sim(const std::vector<CostSampleFile>& files, int test_every, const Context& ctx,
                                           const std::vector<std::string>& paths = {});

/** The calibration as JSON: coefficients by feature name, cache bytes and the error figures. */
[[nodiscard]] std::string sim_calibration_json(const SimCalibration& calibration);

/** The calibration for a person: the error figures as a table, then the non-zero coefficients. */
[[nodiscard]] std::string sim_calibration_text(const SimCalibration& calibration);

}  // namespace embshard
