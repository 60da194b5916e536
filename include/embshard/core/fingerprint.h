#pragma once
/**
 * @file fingerprint.h
 * @brief What makes timings of one machine comparable with another's: recorded with every cost
 *        sample (profile/cost_sample.h), fitted coefficient set (cost/analytic.h) and trained
 *        model (cost/neural_weights.h), and compared with this machine's before they are used.
 *        `this_machine` (profile/cost_sample.h) reads this machine's.
 */
#include <cstdint>
#include <string>

namespace embshard {

struct HardwareFingerprint {
  std::string device_kind;  ///< "cpu" or the GPU's name
  std::string cpu_model;    ///< /proc/cpuinfo "model name"
  int logical_cpus = 0;
  int threads = 0;  ///< threads the measurement used
  std::int64_t llc_bytes = 0;
  std::int64_t memory_bytes = 0;  ///< physical memory (MemTotal)
  bool operator==(const HardwareFingerprint&) const = default;
};

}  // namespace embshard
