#pragma once
/**
 * @file data_io.h
 * @brief JSON files of the data layer: table statistics, pools and tasks.
 *
 * Table statistics file (`embshard stats`, also the `tables` of a pool file):
 *
 *   {"tables": [{"num_rows": 993, "pooling_factor": 3.5, "coverage": 0.98, "batch_size": 64,
 *                "num_indices": 224, "num_distinct": 202, "bins": [17 numbers],
 *                "icdf": [100 numbers]}, ...]}
 *
 * Pool file (`embshard pool`): the same, each table also carrying "id" and its generator
 * parameters under "generator", plus a top-level "pool" block (seed, version, parameters).
 *
 * Task file (`embshard task gen`):
 *
 *   {"schema_version": 1, "id": "...", "protocol": "...", "seed": 7, "batch_size": 65536,
 *    "topology": {"preset": "a100:nodes=1,..."}  (or an explicit topology object),
 *    "constraints": {"allow_column_split": true, "allow_row_split": true, "allow_uvm": false},
 *    "pool_seed": 0,
 *    "tables": [{"name": "t0", "dim": 64, "dtype": "fp32", "pool_id": 17, "stats": {...}}]}
 *
 * A table gives its "stats" inline, or only a "pool_id", resolved against the pool of
 * "pool_seed" at the task's batch size. Stats that give only the shape — {"num_rows",
 * "pooling_factor"} and optionally "coverage", no "bins" — are derived (derived_stats.h) under the
 * task's optional "derived_stats": {"zipf_alpha", "active_ratio", "zipf_offset"} (each defaulting
 * to pool_median_model()); the writer then writes the full statistics with the table's
 * "stats_origin" ("derived:…"), so a written task reads back exactly. A table may also name its
 * "optimizer" ("none" | "rowwise_adagrad" | "adagrad" | "adam": state counted in its memory,
 * table.h) and its "constraints": {"sharding_types": ["row_wise", …], "allow_uvm": false,
 * "min_partition": 32} (TableConstraints); both are written only when not the default. Readers reject malformed JSON,
 * unknown or repeated keys, missing, negative or too large fields and wrong types with one line naming the file and the
 * JSON path (`t.json: tables[0].dim: expected an integer ≥ 1, got -8`); tasks are then checked with
 * `find_error_in_task`.
 */
#include <string>
#include <vector>

#include "embshard/data/pool.h"
#include "embshard/data/task.h"

namespace embshard {

/** Version of the task JSON. */
inline constexpr int kTaskSchemaVersion = 1;

[[nodiscard]] std::string stats_to_json(const std::vector<TableStats>& tables);
[[nodiscard]] std::vector<TableStats> stats_from_json(const std::string& text, const std::string& where);
[[nodiscard]] std::vector<TableStats> read_stats_file(const std::string& path);
void write_stats_file(const std::string& path, const std::vector<TableStats>& tables);

/** The pool with its expected statistics at `batch_size`, computed on `threads` threads. */
[[nodiscard]] std::string pool_to_json(const Pool& pool, std::int64_t batch_size, int threads = 1);

[[nodiscard]] std::string task_to_json(const Task& task);
/** Parses and validates a task (find_error_in_task); `where` names the source in messages. */
[[nodiscard]] Task task_from_json(const std::string& text, const std::string& where);
[[nodiscard]] Task read_task_file(const std::string& path);
void write_task_file(const std::string& path, const Task& task);

}  // namespace embshard
