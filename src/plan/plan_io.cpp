#include "embshard/plan/plan_io.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <utility>

#include "core/json_reader.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace embshard {
namespace {

using Json = nlohmann::json;

// ---- writing ---------------------------------------------------------------------------------

std::string json_string(const std::string& s) { return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string json_range(std::int64_t begin, std::int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

void write_provenance(std::ostringstream& out, const Provenance& p) {
  EMBSHARD_ASSERT(std::isfinite(p.wall_ms));
  out << "  \"provenance\": {\n"
      << "    \"sharder\": " << json_string(p.sharder) << ",\n"
      << "    \"cost_model\": " << json_string(p.cost_model) << ",\n"
      << "    \"task_id\": " << json_string(p.task_id) << ",\n"
      << "    \"embshard_version\": " << json_string(p.embshard_version) << ",\n"
      << "    \"seed\": " << p.seed << ",\n"
      << "    \"wall_ms\": " << Json(p.wall_ms).dump() << ",\n"
      << "    \"created_utc\": " << json_string(p.created_utc);
  if (!p.derived_stats_tables.empty()) {
    out << ",\n    \"derived_stats_tables\": [";
    for (std::size_t i = 0; i < p.derived_stats_tables.size(); ++i)
      out << (i == 0 ? "" : ", ") << json_string(p.derived_stats_tables[i]);
    out << "]";
  }
  out << "\n  },\n";
}

void write_shard(std::ostringstream& out, const Shard& s) {
  out << "      {\"device\": " << s.device << ", \"rows\": " << json_range(s.row_begin, s.row_end)
      << ", \"cols\": " << json_range(s.col_begin, s.col_end) << ", \"hbm_rows\": " << s.rows_in_hbm() << "}";
}

void write_table(std::ostringstream& out, const TablePlacement& tp) {
  out << "    {\"table\": " << json_string(tp.table) << ", \"sharding_type\": \"" << to_string(tp.type)
      << "\", \"shards\": [";
  for (std::size_t i = 0; i < tp.shards.size(); ++i) {
    out << (i == 0 ? "\n" : ",\n");
    write_shard(out, tp.shards[i]);
  }
  out << (tp.shards.empty() ? "]}" : "\n    ]}");
}

void write_groups(std::ostringstream& out, const ShardingGroups& g) {
  if (!g.enabled()) return;
  out << "  \"sharding_groups\": {\"size\": " << g.size << ", \"ranks\": \"" << to_string(g.ranks) << '"';
  if (g.world > 0) out << ", \"world\": " << g.world;
  out << "},\n";
}

// ---- reading ---------------------------------------------------------------------------------

using detail::JsonNode;

/// A count or index: an integer in [0, max].
std::int64_t read_count(const JsonNode& n, std::int64_t max) { return n.as_int(0, max); }

std::pair<std::int64_t, std::int64_t> read_range(const JsonNode& n, std::int64_t max) {
  if (!n.value().is_array() || n.size() != 2)
    n.fail("expected [begin, end] (two integers ≥ 0), got " +
           (n.value().is_array() ? "an array of " + std::to_string(n.size()) : detail::describe_json(n.value())));
  return {read_count(n.at(std::size_t{0}), max), read_count(n.at(std::size_t{1}), max)};
}

Provenance read_provenance(const JsonNode& n) {
  n.expect_object();  // unknown keys are skipped: a writer may record more
  Provenance p;
  const auto text = [&n](const char* name, std::string& field) {
    if (n.has(name)) field = n.at(name).as_string();
  };
  text("sharder", p.sharder);
  text("cost_model", p.cost_model);
  text("task_id", p.task_id);
  text("embshard_version", p.embshard_version);
  text("created_utc", p.created_utc);
  if (n.has("seed")) p.seed = n.at("seed").as_uint64();
  if (n.has("wall_ms")) p.wall_ms = n.at("wall_ms").as_double(0.0);
  if (n.has("derived_stats_tables")) {
    const JsonNode names = n.at("derived_stats_tables");
    names.expect_array();
    for (std::size_t i = 0; i < names.size(); ++i) p.derived_stats_tables.push_back(names.at(i).as_string());
  }
  return p;
}

Shard read_shard(const JsonNode& n) {
  n.only_keys({"device", "rows", "cols", "hbm_rows"});
  // No task accepts more rows, dims or devices (table.h, topology.h), so larger numbers are
  // rejected here, before any arithmetic on them.
  constexpr std::int64_t kMaxRows = kMaxTableRows;
  Shard s;
  s.device = static_cast<int>(read_count(n.at("device"), kMaxDevices - 1));
  std::tie(s.row_begin, s.row_end) = read_range(n.at("rows"), kMaxRows);
  const auto cols = read_range(n.at("cols"), kMaxTableDim);
  s.col_begin = static_cast<int>(cols.first);
  s.col_end = static_cast<int>(cols.second);
  if (n.has("hbm_rows")) s.hbm_rows = read_count(n.at("hbm_rows"), kMaxRows);
  if (s.hbm_rows == s.num_rows()) s.hbm_rows = -1;  // every row of the shard: the canonical form
  return s;
}

TablePlacement read_table(const JsonNode& n) {
  n.only_keys({"table", "sharding_type", "shards"});
  TablePlacement tp;
  tp.table = n.at("table").as_string();
  const JsonNode type = n.at("sharding_type");
  tp.type = parse_sharding_type(type.as_string(), type.label());
  const JsonNode shards = n.at("shards");
  shards.expect_array();
  tp.shards.reserve(shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i) tp.shards.push_back(read_shard(shards.at(i)));
  return tp;
}

ShardingGroups read_groups(const JsonNode& n) {
  n.only_keys({"size", "ranks", "world"});
  ShardingGroups g;
  g.size = static_cast<int>(n.at("size").as_int(1, kMaxDevices - 1));
  if (n.has("ranks")) g.ranks = parse_group_ranks(n.at("ranks").as_string(), n.at("ranks").label());
  if (n.has("world")) g.world = static_cast<int>(n.at("world").as_int(2, kMaxDevices));
  return g;
}

void check_schema_version(const JsonNode& n) {
  const std::int64_t version = n.as_int();
  if (version != kPlanSchemaVersion)
    n.fail("version " + std::to_string(version) + " is not supported (this build reads version " +
           std::to_string(kPlanSchemaVersion) + " only)");
}

}  // namespace

std::string plan_to_json(const Plan& plan) {
  std::ostringstream out;
  out << "{\n  \"schema_version\": " << kPlanSchemaVersion << ",\n";
  write_provenance(out, plan.provenance);
  write_groups(out, plan.groups);
  out << "  \"tables\": [";
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    out << (i == 0 ? "\n" : ",\n");
    write_table(out, plan.tables[i]);
  }
  out << (plan.tables.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return out.str();
}

Plan plan_from_json(const std::string& text, const std::string& where) {
  const nlohmann::json document = detail::parse_json(text, where);
  const JsonNode root(document, where);
  root.only_keys({"schema_version", "provenance", "sharding_groups", "tables"});
  check_schema_version(root.at("schema_version"));
  Plan plan;
  if (root.has("provenance")) plan.provenance = read_provenance(root.at("provenance"));
  if (root.has("sharding_groups")) plan.groups = read_groups(root.at("sharding_groups"));
  const JsonNode tables = root.at("tables");
  tables.expect_array();
  plan.tables.reserve(tables.size());
  for (std::size_t i = 0; i < tables.size(); ++i) plan.tables.push_back(read_table(tables.at(i)));
  return plan;
}

void write_plan_file(const std::string& path, const Plan& plan) { write_file_atomic(path, plan_to_json(plan)); }

Plan read_plan_file(const std::string& path) { return plan_from_json(read_file(path), path); }

}  // namespace embshard
