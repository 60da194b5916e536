#include "embshard/plan/torchrec_export.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace embshard {
namespace {

using OrderedJson = nlohmann::ordered_json;

/// One exported shard: offsets and sizes are [row, column].
struct TorchrecShard {
  int rank = 0;
  std::int64_t row_offset = 0;
  std::int64_t num_rows = 0;
  int col_offset = 0;
  int num_cols = 0;
};

std::string table_context(const std::string& table) { return "torchrec export: table '" + table + "': "; }

std::string placement(int rank, int local_world_size, TorchrecDevice device) {
  if (device == TorchrecDevice::kCpu) return "rank:" + std::to_string(rank) + "/cpu";
  return "rank:" + std::to_string(rank) + "/cuda:" + std::to_string(rank % local_world_size);
}

TorchrecShard exported(const Shard& s) { return {s.device, s.row_begin, s.num_rows(), s.col_begin, s.num_cols()}; }

/**
 * The row blocks TorchRec's row-wise input dist assumes over `num_ranks` ranks starting at
 * `first_rank`: block b = ceil(rows / num_ranks), rank k holds [k·b, min((k+1)·b, rows)),
 * possibly empty. Checks that the non-empty blocks are exactly `shards`; returns all
 * `num_ranks` blocks.
 */
std::vector<TorchrecShard> row_blocks(const std::string& table, const char* type_name, std::int64_t rows, int dim,
                                      int first_rank, int num_ranks, std::vector<Shard> shards) {
  std::sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) { return a.row_begin < b.row_begin; });
  const std::int64_t block_rows = (rows + num_ranks - 1) / num_ranks;
  std::vector<TorchrecShard> blocks;
  for (int k = 0; k < num_ranks; ++k) {
    const std::int64_t begin = std::min(rows, k * block_rows);
    const std::int64_t end = std::min(rows, begin + block_rows);
    const TorchrecShard block{first_rank + k, begin, end - begin, 0, dim};
    const auto index = static_cast<std::size_t>(k);
    if (block.num_rows > 0) {
      EMBSHARD_CHECK(index < shards.size(), table_context(table), type_name, " needs ", num_ranks, " blocks of ceil(",
                     rows, " / ", num_ranks, ") = ", block_rows,
                     " rows (TorchRec's input dist assumes them), but has only ", shards.size(), " shards");
      const Shard& s = shards[index];
      EMBSHARD_CHECK(s.device == block.rank && s.row_begin == begin && s.row_end == end, table_context(table),
                     type_name, " needs rows [", begin, ", ", end, ") on rank ", block.rank, " (blocks of ceil(", rows,
                     " / ", num_ranks, ") = ", block_rows, " rows in rank order), but shard ", k, " has rows [",
                     s.row_begin, ", ", s.row_end, ") on device ", s.device);
    }
    blocks.push_back(block);
  }
  return blocks;
}

std::vector<TorchrecShard> row_wise_shards(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  return row_blocks(spec.name, "row_wise", spec.num_rows(), spec.dim, 0, task.topology.num_devices(), tp.shards);
}

std::vector<TorchrecShard> table_row_wise_shards(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  const int local_world_size = task.topology.devices_per_host;
  const int host = tp.shards.front().device / local_world_size;
  const int first_rank = host * local_world_size;
  EMBSHARD_CHECK(first_rank + local_world_size <= task.topology.num_devices(), table_context(spec.name),
                 "table_row_wise needs all ", local_world_size, " ranks of host ", host,
                 ", but the topology ends at device ", task.topology.num_devices() - 1);
  return row_blocks(spec.name, "table_row_wise", spec.num_rows(), spec.dim, first_rank, local_world_size, tp.shards);
}

std::vector<TorchrecShard> column_wise_shards(const TablePlacement& tp) {
  std::vector<TorchrecShard> shards;
  for (const Shard& s : tp.shards) shards.push_back(exported(s));
  std::sort(shards.begin(), shards.end(),
            [](const TorchrecShard& a, const TorchrecShard& b) { return a.col_offset < b.col_offset; });
  return shards;
}

std::vector<TorchrecShard> torchrec_shards(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  switch (tp.type) {
    case ShardingType::kTableWise: return {exported(tp.shards.front())};
    case ShardingType::kColumnWise: return column_wise_shards(tp);
    case ShardingType::kRowWise: return row_wise_shards(task, spec, tp);
    case ShardingType::kTableRowWise: return table_row_wise_shards(task, spec, tp);
    case ShardingType::kGridShard:
      EMBSHARD_THROW(table_context(spec.name),
                     "grid_shard is not exported: TorchRec's grid_shard puts each column "
                     "block row-wise over the ranks of one host, which embshard's grids need not (plan with "
                     "joint:torchrec=true, which makes none)");
    case ShardingType::kDataParallel:  // ranks in order; TorchRec's DP sharding has no shard spec
      std::vector<TorchrecShard> copies;
      for (int rank = 0; rank < task.topology.num_devices(); ++rank)
        copies.push_back({rank, 0, spec.num_rows(), 0, spec.dim});
      return copies;
  }
  EMBSHARD_ASSERT(false);
  return {};
}

void check_device_supports(const TablePlacement& tp, const TorchrecExportOptions& options) {
  if (options.compute_device != TorchrecDevice::kCpu) return;
  const bool row_split = tp.type == ShardingType::kRowWise || tp.type == ShardingType::kTableRowWise;
  EMBSHARD_CHECK(!row_split, table_context(tp.table), to_string(tp.type),
                 " is not available on compute_device cpu (TorchRec allows only table_wise and "
                 "column_wise there)");
}

/// The table's TorchRec compute kernel and, for the caching kernel, its cache size.
struct KernelChoice {
  std::string kernel;
  double load_factor = 0.0;  ///< share of the table's rows in HBM; used by fused_uvm_caching
};

KernelChoice kernel_of(const TablePlacement& tp, const TorchrecExportOptions& options) {
  if (tp.type == ShardingType::kDataParallel) return {"dense", 1.0};  // DP's only kernel
  std::int64_t rows = 0;
  std::int64_t hbm_rows = 0;
  for (const Shard& s : tp.shards) {
    rows += s.num_rows();
    hbm_rows += s.rows_in_hbm();
  }
  if (hbm_rows == rows) return {"fused", 1.0};
  EMBSHARD_CHECK(options.compute_device == TorchrecDevice::kCuda, table_context(tp.table), "keeps ", rows - hbm_rows,
                 " rows in UVM, which TorchRec supports only on compute_device cuda");
  if (hbm_rows == 0) return {"fused_uvm", 0.0};
  return {"fused_uvm_caching", static_cast<double>(hbm_rows) / static_cast<double>(rows)};
}

/// `text` as a JSON string, byte for byte (Error if it is not UTF-8).
std::string json_string_exact(const std::string& text) {
  std::string quoted;
  try {
    quoted = OrderedJson(text).dump(-1, ' ', false, OrderedJson::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    // A replaced character would no longer match the model's table names.
    EMBSHARD_THROW("torchrec export: a table name or the module path is not valid UTF-8 (", e.what(), ")");
  }
  return quoted;
}

std::string shard_line(const TorchrecShard& s, int local_world_size, TorchrecDevice device) {
  return "{\"shard_offsets\": [" + std::to_string(s.row_offset) + ", " + std::to_string(s.col_offset) +
         "], \"shard_sizes\": [" + std::to_string(s.num_rows) + ", " + std::to_string(s.num_cols) +
         "], \"placement\": \"" + placement(s.rank, local_world_size, device) + "\"}";
}

std::string ranks_list(const std::vector<TorchrecShard>& shards) {
  std::string text = "[";
  for (std::size_t i = 0; i < shards.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(shards[i].rank);
  return text + "]";
}

/// One table: its fields on one line, then one shard per line.
void write_table(std::ostringstream& out, const Task& task, const TableSpec& spec, const TablePlacement& tp,
                 const TorchrecExportOptions& options) {
  check_device_supports(tp, options);
  const KernelChoice kernel = kernel_of(tp, options);
  const std::vector<TorchrecShard> shards = torchrec_shards(task, spec, tp);
  out << "      " << json_string_exact(tp.table) << ": {\"sharding_type\": \"" << to_string(tp.type)
      << "\", \"compute_kernel\": \"" << kernel.kernel << "\", \"ranks\": " << ranks_list(shards)
      << ",\n        \"shards\": [";
  for (std::size_t i = 0; i < shards.size() && tp.type != ShardingType::kDataParallel; ++i)
    out << (i == 0 ? "\n" : ",\n") << "          "
        << shard_line(shards[i], task.topology.devices_per_host, options.compute_device);
  out << "]";
  if (kernel.kernel == "fused_uvm_caching")
    out << ",\n        \"cache_params\": {\"algorithm\": \"LRU\", \"load_factor\": "
        << OrderedJson(kernel.load_factor).dump() << "}";
  out << "}";
}

}  // namespace

const char* to_string(TorchrecDevice device) { return device == TorchrecDevice::kCpu ? "cpu" : "cuda"; }

std::string find_error_in_one_module_export(const Task& task) {
  const auto sequence = std::count_if(task.workload.tables.begin(), task.workload.tables.end(),
                                      [](const TableSpec& t) { return !t.pooled; });
  if (sequence == 0 || sequence == static_cast<std::ptrdiff_t>(task.workload.tables.size())) return "";
  return "the task has pooled and sequence tables, which TorchRec keeps in two modules (an EmbeddingBagCollection "
         "and an EmbeddingCollection); a plan file names one module: plan such a model with "
         "embshard.torchrec.EmbshardPlanner, which keeps each module's path";
}

std::string torchrec_plan_json(const Task& task, const Plan& plan, const TorchrecExportOptions& options) {
  const std::string error = find_error_in_plan(task, plan);
  EMBSHARD_CHECK(error.empty(), "torchrec export: ", error);
  std::unordered_map<std::string, const TableSpec*> spec_by_name;
  for (const TableSpec& spec : task.workload.tables) spec_by_name[spec.name] = &spec;
  // A 2D plan is one sharding group's plan over its ranks (plan/sharding_groups.h).
  EMBSHARD_CHECK(!plan.groups.enabled() || options.compute_device == TorchrecDevice::kCuda,
                 "torchrec export: a 2D plan runs under TorchRec's DMPCollection, which supports compute_device "
                 "cuda only");
  const Task group = sharding_group_task(task, plan.groups);

  std::ostringstream out;
  out << "{\"world_size\": " << task.topology.num_devices()
      << ", \"local_world_size\": " << task.topology.devices_per_host << ", \"compute_device\": \""
      << to_string(options.compute_device) << "\",\n";
  if (plan.groups.enabled()) {
    out << "  \"sharding_group_size\": " << plan.groups.size
        << ", \"node_group_size\": " << group.topology.devices_per_host
        << ", \"use_inter_host_allreduce\": " << (plan.groups.ranks == GroupRanks::kContiguous ? "true" : "false")
        << ",\n";
  }
  out << "  \"plan\": {\n    " << json_string_exact(options.module_path) << ": {";
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    out << (i == 0 ? "\n" : ",\n");
    const TablePlacement& tp = plan.tables[i];
    write_table(out, group, *spec_by_name.at(tp.table), tp, options);
  }
  out << "\n    }\n  }\n}\n";
  return out.str();
}

void write_torchrec_plan_file(const std::string& path, const Task& task, const Plan& plan,
                              const TorchrecExportOptions& options) {
  write_file_atomic(path, torchrec_plan_json(task, plan, options));
}

}  // namespace embshard
