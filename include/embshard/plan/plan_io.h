#pragma once
/**
 * @file plan_io.h
 * @brief Plan files: the JSON form of a `Plan`.
 *
 * Format (schema_version 1, see kPlanSchemaVersion):
 *
 *   {"schema_version": 1,
 *    "provenance": {"sharder": "...", "cost_model": "...", "task_id": "...",
 *                   "embshard_version": "...", "seed": 42, "wall_ms": 12.5,
 *                   "created_utc": "2024-01-01T00:00:00Z",
 *                   "derived_stats_tables": ["t3"]},   (only when some table's statistics
 *                                                       were derived, derived_stats.h)
 *    "sharding_groups": {"size": 8, "ranks": "strided", "world": 64},
 *                      (only in a 2D plan, plan/sharding_groups.h; ranks and world optional:
 *                       a plan records its world, and one without it is taken to be the task's)
 *    "tables": [{"table": "t0", "sharding_type": "table_wise",
 *                "shards": [{"device": 0, "rows": [0, 1000], "cols": [0, 64],
 *                            "hbm_rows": 1000}]}]}
 *
 * `rows` and `cols` are [begin, end) ranges. `hbm_rows` is the number of the *shard's* rows in
 * HBM — its hottest ones, ranked within the shard's own row range (plan.h) — never a count of the
 * whole table's rows. It is written always (`Shard::rows_in_hbm()`); when read, an absent
 * `hbm_rows` or one equal to the shard's row count means all rows (-1), any other value is kept
 * as written (`find_error_in_plan` rejects one above the shard's rows, or below them on a task
 * that forbids UVM). So a plan read back from its file evaluates exactly as it did in memory.
 *
 * Reading is strict: every field of a table and a shard except `hbm_rows` is required, numbers
 * must be integers ≥ 0 (`wall_ms` a finite number ≥ 0, `seed` an unsigned 64-bit integer), and
 * unknown or repeated keys are errors so that a typo is never silently ignored. The provenance
 * block and each of its fields are optional (a hand-written plan may leave them out); unknown
 * keys inside it are skipped. Reading checks the form only: whether the plan fits its task is
 * `find_error_in_plan`'s job.
 *
 * Every reading error is an `embshard::Error` with one line naming the file (`where`) and the
 * JSON path of the problem, e.g. `plan.json: tables[3].shards[0].device: expected an integer ≥ 0,
 * got -1`.
 */
#include <string>

#include "embshard/plan/plan.h"

namespace embshard {

/** The JSON text of `plan` (one shard per line, ends with a newline). */
[[nodiscard]] std::string plan_to_json(const Plan& plan);

/** Parses a plan from JSON `text`; `where` (a file name) prefixes every error message. */
[[nodiscard]] Plan plan_from_json(const std::string& text, const std::string& where);

/** Writes `plan` to `path` atomically (`write_file_atomic`). */
void write_plan_file(const std::string& path, const Plan& plan);

/** Reads the plan file at `path`; errors name the file. */
[[nodiscard]] Plan read_plan_file(const std::string& path);

}  // namespace embshard
