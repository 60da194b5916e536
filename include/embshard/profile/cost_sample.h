#pragma once
/**
 * @file cost_sample.h
 * @brief The append-only cost-sample file: the training data of every cost model.
 *
 * JSON Lines. Line 1 is the header; every further line is one sample:
 *
 *   {"format": "embshard-cost-samples", "version": 1, "kind": "compute" | "comm",
 *    "backend": "cpu", "sampler": "<canonical sampler spec>", "seed": 7, "pool_seed": 0,
 *    "batch_size": 8192, "precision": "fp32",
 *    "measure": {"warmup": 2, "repeats": 5, "flush_cache": true, "trim": 0.2},
 *    "fingerprint": {"device_kind": "...", "cpu_model": "...", "logical_cpus": 2,
 *                    "threads": 2, "llc_bytes": 33554432, "memory_bytes": ...},
 *    "embshard_version": "0.1.0+abc", "created_utc": "..."}
 *   {"index": 0, "tables": [{"pool_id": 12, "dim": 64}, ...],            // compute
 *    "fw_ms": 1.2, "bw_ms": 3.4, "fw_trimmed_ms": 1.21, "bw_trimmed_ms": 3.5}
 *   {"index": 0, "dim_sums": [256, 128, 64, 512], "sleep_ms": [0, 3, 1, 0], // comm, per device
 *    "fw_ms": [...], "bw_ms": [...]}
 *
 * Times are medians over the measured repeats (`*_trimmed_ms` the trimmed mean). Sample i is a
 * pure function of (sampler, seed, i), so collection can stop anywhere and resume:
 * `CostSampleWriter` reopens an existing file only if its header describes the same experiment
 * (everything but version string and creation time), drops a torn last line (a crash while
 * writing it), checks the indices run 0, 1, 2, … and continues at the next one. Each sample is
 * appended with one write(2) and flushed, so a crash loses at most the sample being measured.
 * One writer at a time: `CostSampleWriter` locks the file (see the class).
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/core/fingerprint.h"
#include "embshard/profile/measure.h"

namespace embshard {

inline constexpr int kCostSampleVersion = 1;

enum class SampleKind { kCompute, kComm };
[[nodiscard]] const char* to_string(SampleKind kind);

/**
 * This machine's fingerprint for a measurement with `threads` threads on `device_kind`.
 *
 * The environment variable `EMBSHARD_FAKE_FINGERPRINT` replaces parts of it, so a test suite can
 * prove it does not depend on the host (scripts/test_fake_fingerprint.sh) and a user can
 * reproduce another machine's files:
 *
 *   EMBSHARD_FAKE_FINGERPRINT="host:cpu_model=Fake EPYC,logical_cpus=2,llc_bytes=33554432,memory_bytes=25769803776"
 *
 * Keys not given keep this machine's values; an unknown key, a bad number or a name other than
 * `host` is an Error naming the variable. Only the recorded fingerprint changes: measurements
 * (the cache flusher, thread counts) still use the real machine.
 */
[[nodiscard]] HardwareFingerprint this_machine(const std::string& device_kind, int threads);

/** The environment variable read by `this_machine`. */
inline constexpr const char* kFakeFingerprintVariable = "EMBSHARD_FAKE_FINGERPRINT";

struct CostSampleHeader {
  SampleKind kind = SampleKind::kCompute;
  std::string backend = "cpu";
  std::string sampler;  ///< canonical spec of the sampler that drew the samples
  std::uint64_t seed = 0;
  std::uint64_t pool_seed = 0;
  std::int64_t batch_size = 0;
  std::string precision = "fp32";
  MeasureOptions measure;
  HardwareFingerprint fingerprint;
  std::string embshard_version;  ///< informational
  std::string created_utc;       ///< informational
};

/**
 * "" if `existing` (read from a file) describes the same experiment as `wanted`, else a line
 * naming the first field that differs and both values.
 */
[[nodiscard]] std::string find_header_mismatch(const CostSampleHeader& existing, const CostSampleHeader& wanted);

/** A table of a measured shard: a pool table at a (possibly augmented) dim. */
struct SampleTable {
  std::int64_t pool_id = 0;
  int dim = 0;
  bool operator==(const SampleTable&) const = default;
};

struct ComputeSample {
  std::int64_t index = 0;
  std::vector<SampleTable> tables;  ///< fused into one kernel call, in this order
  double fw_ms = 0.0;
  double bw_ms = 0.0;
  double fw_trimmed_ms = 0.0;
  double bw_trimmed_ms = 0.0;
};

struct CommSample {
  std::int64_t index = 0;
  std::vector<std::int64_t> dim_sums;  ///< per device: summed dims of its tables
  std::vector<double> sleep_ms;        ///< per device: delay before it joined the forward a2a
  std::vector<double> fw_ms;           ///< per device: forward all-to-all time (sleep excluded)
  std::vector<double> bw_ms;           ///< per device: backward all-to-all time
};

/** A whole file, read strictly (errors name the file, line and field). */
struct CostSampleFile {
  CostSampleHeader header;
  std::vector<ComputeSample> compute;  ///< filled when header.kind == kCompute
  std::vector<CommSample> comm;        ///< filled when header.kind == kComm
};

/** Reads a cost-sample file; a torn last line is ignored (with a warning on `ctx`). */
[[nodiscard]] CostSampleFile read_cost_samples(const std::string& path, const Context& ctx);

/**
 * Appends samples to a file, creating or resuming it (see the file comment). A file has one
 * writer at a time: the writer holds an advisory lock (fcntl) while it lives, and a second
 * writer, in this process or another, fails at once naming the holder's pid. An empty file (a
 * run stopped before its header) is started afresh.
 */
class CostSampleWriter {
 public:
  /**
   * Opens `path`; throws Error if another writer holds it, if an existing file's header does not
   * match `header`, or if its header line was cut short (the message says to delete the file).
   */
  CostSampleWriter(std::string path, const CostSampleHeader& header, const Context& ctx);
  ~CostSampleWriter();
  CostSampleWriter(const CostSampleWriter&) = delete;
  CostSampleWriter& operator=(const CostSampleWriter&) = delete;

  /** Index of the next sample (number of samples already in the file). */
  [[nodiscard]] std::int64_t next_index() const { return next_index_; }
  void append(const ComputeSample& sample);
  void append(const CommSample& sample);

 private:
  void resume(const CostSampleHeader& header, const Context& ctx);
  void append_line(const std::string& line);

  std::string path_;
  SampleKind kind_;
  int fd_ = -1;
  std::int64_t next_index_ = 0;
};

}  // namespace embshard
