#pragma once
/**
 * @file comm_model.h
 * @brief Where a device's all-to-all cost comes from: the interface beside `ComputeModel`
 *        (the link model of a topology, neural models trained on measured all-to-alls).
 *
 * A step has two output exchanges (cost/breakdown.h). Device d's shards produce outputs of
 * `outputs.total(d)` columns — pooled vectors of the shards that span their table's rows, partial
 * sums of those that hold a row range (`OutputDims`) —; it joins the forward exchange when its
 * forward compute ends, after `fw_comp_ms[d]`. A comm model returns, per device, the time it spends in each all-to-all
 * *not counting* the straggler wait max_e fw_comp_e − fw_comp_d, which the breakdown carries separately (`fw_wait_ms`).
 * Models that only see volumes (the link model) ignore `fw_comp_ms`; models trained on measurements with late arrivals
 * (NeuroShard's forward model) use it to predict, then take the wait back out.
 *
 * Before the forward, the input all-to-all sends every device the indices its shards look up
 * (cost/link_model.h). Every comm model costs it with the link model (no trained model has seen
 * it) and says through `input_options()` whether the step pays it.
 */
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace embshard {

struct Task;

/** Whether a step pays the input all-to-all (cost/link_model.h, `input_comm`). */
enum class InputCommMode { kExposed, kOverlap, kOmit };
/** "exposed", "overlap", "omit". */
[[nodiscard]] const char* to_string(InputCommMode mode);

struct InputCommOptions;

/**
 * What the devices put into the output exchange (cost/link_model.h prices it as NCCL and TorchRec
 * run it). A shard spanning its table's rows (table-wise, a column piece) outputs pooled vectors,
 * sent by all-to-all; a shard of a row range (row-wise, table-row-wise, a grid block) outputs
 * partial sums of all its columns for the whole batch, reduce-scattered inside its host, and each
 * host's reduced rows then go to the devices of the other hosts. Copies of data-parallel tables
 * output nothing (their gradients are all-reduced instead).
 */
struct OutputDims {
  std::vector<std::int64_t> pooled;   ///< per device: columns of its shards that span their table's rows
  std::vector<std::int64_t> partial;  ///< per device: columns of its shards of a row range
  /// per host: the columns its partial sums reduce to — each column of a table (or grid column
  /// block) with a row range on the host, once
  std::vector<std::int64_t> reduced;
  /** Both kinds of a device's columns: what a model that does not tell them apart sees. */
  [[nodiscard]] std::int64_t total(std::size_t device) const { return pooled[device] + partial[device]; }
  [[nodiscard]] std::vector<std::int64_t> totals() const;
};

struct DeviceComm {
  double fw_ms = 0.0;  ///< forward all-to-all, straggler wait excluded
  double bw_ms = 0.0;  ///< backward all-to-all
};

class CommModel {
 public:
  virtual ~CommModel() = default;
  /** Canonical spec, e.g. "link" or "neural". */
  [[nodiscard]] virtual std::string spec() const = 0;
  /** Human-readable detail for reports: topology, batch, training data. */
  [[nodiscard]] virtual std::string detail() const = 0;
  /** Per device (file comment); `outputs` and `fw_comp_ms` have one entry per device. */
  [[nodiscard]] virtual std::vector<DeviceComm> device_comm(const Task& task, const OutputDims& outputs,
                                                            std::span<const double> fw_comp_ms) = 0;
  /** `device_comm` into `out` (one entry per device); models that can, avoid allocating (search code). */
  virtual void device_comm_into(const Task& task, const OutputDims& outputs, std::span<const double> fw_comp_ms,
                                std::span<DeviceComm> out) {
    const std::vector<DeviceComm> comm = device_comm(task, outputs, fw_comp_ms);
    std::copy(comm.begin(), comm.end(), out.begin());
  }
  /** How the input all-to-all is costed (cost/link_model.h). */
  [[nodiscard]] virtual const InputCommOptions& input_options() const = 0;
  /**
   * Whether `device_comm` is the link model of the task's topology at the task's batch (4-byte
   * outputs), which search code may then keep up to date incrementally (shard/joint).
   */
  [[nodiscard]] virtual bool is_link_model() const { return false; }
};

}  // namespace embshard
