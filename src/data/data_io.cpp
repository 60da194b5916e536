#include "embshard/data/data_io.h"

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/json_reader.h"
#include "embshard/core/file_io.h"
#include "embshard/core/spec.h"
#include "embshard/data/derived_stats.h"

namespace embshard {
namespace {

using detail::JsonNode;
using nlohmann::json;

json stats_json(const TableStats& s) {
  json j = {{"num_rows", s.num_rows},
            {"pooling_factor", s.pooling_factor},
            {"coverage", s.coverage},
            {"batch_size", s.batch_size},
            {"num_indices", s.num_indices},
            {"num_distinct", s.num_distinct},
            {"bins", s.bins}};
  if (!s.icdf.empty()) j["icdf"] = s.icdf;
  return j;
}

/** Reads and checks one table's statistics; errors start with `where` (file, path, table). */
TableStats stats_from(const JsonNode& n, const std::string& where) {
  // Any number here; the ranges are checked below by find_error_in_stats, naming the table.
  TableStats s;
  s.num_rows = n.at("num_rows").as_int();
  s.pooling_factor = n.at("pooling_factor").as_double();
  s.coverage = n.at("coverage").as_double();
  s.batch_size = n.has("batch_size") ? n.at("batch_size").as_int() : 0;
  s.num_indices = n.has("num_indices") ? n.at("num_indices").as_int() : 0;
  s.num_distinct = n.has("num_distinct") ? n.at("num_distinct").as_int() : 0;
  const JsonNode bins = n.at("bins");
  bins.expect_array();
  if (bins.size() != kNumReuseBins) bins.fail(detail::concat("expected ", kNumReuseBins, " values, got ", bins.size()));
  const std::vector<double> bin_values = bins.as_doubles();
  std::copy(bin_values.begin(), bin_values.end(), s.bins.begin());
  if (n.has("icdf")) s.icdf = n.at("icdf").as_doubles();
  const std::string err = find_error_in_stats(s, where);
  EMBSHARD_CHECK(err.empty(), err);
  return s;
}

#define EMBSHARD_STATS_KEYS \
  "num_rows", "pooling_factor", "coverage", "batch_size", "num_indices", "num_distinct", "bins", "icdf"

json topology_json(const Topology& t) {
  if (!t.name.empty() && t.name != "custom" && !t.half_duplex) return {{"preset", t.name}};
  json devices = json::array();
  for (const Device& d : t.devices) {
    json device = {
        {"hbm_bytes", d.hbm_bytes}, {"uvm_bytes", d.uvm_bytes}, {"hbm_gbps", d.hbm_gbps}, {"uvm_gbps", d.uvm_gbps}};
    // A host's own links (mixed hardware), written only where named: other files stay as they were.
    if (d.intra_host_gbps > 0) device["intra_host_gbps"] = d.intra_host_gbps;
    if (d.inter_host_gbps > 0) device["inter_host_gbps"] = d.inter_host_gbps;
    devices.push_back(std::move(device));
  }
  json out = {{"device_kind", t.device_kind},         {"devices_per_host", t.devices_per_host},
              {"intra_host_gbps", t.intra_host_gbps}, {"inter_host_gbps", t.inter_host_gbps},
              {"a2a_latency_us", t.a2a_latency_us},   {"devices", devices}};
  if (t.half_duplex) out["half_duplex"] = true;  // written only when set: full-duplex files stay as they were
  return out;
}

/**
 * Mixed hardware: `{"hosts": ["h200", "h100:nodes=2"]}`, hosts of preset specs one after another
 * (data/topology.h). Every preset's hosts must be the same size; each host keeps its preset's links
 * (Device::intra_host_gbps / inter_host_gbps, named on every device where the presets' differ), the
 * topology's are the slowest of them, and the latency is the largest; device_kind is the first
 * preset's (the sim model costs every device in its terms, cost/analytic.h).
 */
Topology mixed_topology_from(const JsonNode& hosts) {
  hosts.expect_array(1);
  Topology t;
  t.name = "custom";
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const JsonNode entry = hosts.at(i);
    const std::string spec = entry.as_string();  // its own error names the entry already
    Topology part;
    try {
      part = make_topology(spec);
    } catch (const Error& e) {
      entry.fail(e.what());
    }
    for (Device& d : part.devices) d.intra_host_gbps = part.intra_host_gbps, d.inter_host_gbps = part.inter_host_gbps;
    if (i == 0) {
      t = part, t.name = "custom";
      continue;
    }
    if (part.host_size() != t.host_size())
      entry.fail(detail::concat("hosts of ", part.host_size(), " devices beside hosts of ", t.host_size(),
                                " (every host must have as many devices)"));
    t.devices.insert(t.devices.end(), part.devices.begin(), part.devices.end());
    t.a2a_latency_us = std::max(t.a2a_latency_us, part.a2a_latency_us);
  }
  t.devices_per_host = t.host_size();
  settle_host_links(t);     // the slowest preset's links the topology's; none of its own where all are alike
  if (t.num_hosts() > 1) {  // an all-to-all across hosts: each preset's latency as it has across its own hosts
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      Spec spec = parse_spec(hosts.at(i).as_string());
      set_spec_value(spec, "nodes", "2");
      t.a2a_latency_us = std::max(t.a2a_latency_us, make_topology(format_spec(spec)).a2a_latency_us);
    }
  }
  return t;
}

Topology topology_from(const JsonNode& n) {
  n.expect_object();
  if (n.has("hosts")) {
    n.only_keys({"hosts"});
    return mixed_topology_from(n.at("hosts"));
  }
  if (n.has("preset")) {
    n.only_keys({"preset"});
    const JsonNode preset = n.at("preset");
    const std::string spec = preset.as_string();
    try {
      return make_topology(spec);
    } catch (const Error& e) {
      preset.fail(e.what());
    }
  }
  n.only_keys({"device_kind", "devices_per_host", "intra_host_gbps", "inter_host_gbps", "a2a_latency_us", "half_duplex",
               "devices"});
  Topology t;
  t.name = "custom";
  t.device_kind = n.has("device_kind") ? n.at("device_kind").as_string() : "custom";
  t.devices_per_host = static_cast<int>(n.at("devices_per_host").as_int(1, INT_MAX));
  t.intra_host_gbps = n.at("intra_host_gbps").as_double(0);
  t.inter_host_gbps = n.at("inter_host_gbps").as_double(0);
  t.a2a_latency_us = n.at("a2a_latency_us").as_double(0);
  t.half_duplex = n.has("half_duplex") && n.at("half_duplex").as_bool();
  const JsonNode devices = n.at("devices");
  devices.expect_array(1);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const JsonNode d = devices.at(i);
    d.only_keys({"hbm_bytes", "uvm_bytes", "hbm_gbps", "uvm_gbps", "intra_host_gbps", "inter_host_gbps"});
    Device device{d.at("hbm_bytes").as_int(0), d.at("uvm_bytes").as_int(0), d.at("hbm_gbps").as_double(0),
                  d.at("uvm_gbps").as_double(0)};
    if (d.has("intra_host_gbps")) device.intra_host_gbps = d.at("intra_host_gbps").as_double(0);
    if (d.has("inter_host_gbps")) device.inter_host_gbps = d.at("inter_host_gbps").as_double(0);
    t.devices.push_back(device);
  }
  return t;
}

DerivedStatsModel derived_model_from(const JsonNode& n) {
  n.only_keys({"zipf_alpha", "active_ratio", "zipf_offset"});
  DerivedStatsModel m = pool_median_model();
  if (n.has("zipf_alpha")) m.zipf_alpha = n.at("zipf_alpha").as_double();
  if (n.has("active_ratio")) m.active_ratio = n.at("active_ratio").as_double();
  if (n.has("zipf_offset")) m.zipf_offset = n.at("zipf_offset").as_int();
  const std::string err = find_error_in_model(m, n.label());
  EMBSHARD_CHECK(err.empty(), err);
  return m;
}

/**
 * The statistics already derived while reading one task, by (rows, pooling factor, coverage):
 * models with many tables of one shape derive it once (a derivation takes milliseconds).
 */
using DerivedStatsMemo = std::map<std::tuple<std::int64_t, double, double>, TableStats>;
/** The same for tables given by `pool_id` alone: each pool table's expected statistics at the
 *  task's batch, computed once (about 1 ms each; a task of 65,536 tables draws on a pool of far
 *  fewer). */
using PoolStatsMemo = std::map<std::int64_t, TableStats>;

/** A table's "stats" with only the shape (no "bins"): derived under `model` (derived_stats.h). */
TableStats derived_stats_from(const JsonNode& s, std::int64_t batch_size, const DerivedStatsModel& model,
                              const std::string& where, DerivedStatsMemo& memo) {
  s.only_keys({"num_rows", "pooling_factor", "coverage"});
  // Absent coverage is -1 ("min(1, pooling)"); a given one must lie in [0, 1].
  const double coverage = s.has("coverage") ? s.at("coverage").as_double(0.0) : -1.0;
  const std::int64_t rows = s.at("num_rows").as_int();
  const double pooling = s.at("pooling_factor").as_double();
  const auto key = std::make_tuple(rows, pooling, coverage);
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  return memo.emplace(key, derive_table_stats(rows, pooling, coverage, batch_size, model, where)).first->second;
}

/** A list of groups of table names: [["a", "b"], ["c", "d", "e"]] (task.h PlacementGroups). */
std::vector<std::vector<std::string>> table_groups_from(const JsonNode& n) {
  n.expect_array();
  std::vector<std::vector<std::string>> groups;
  for (std::size_t g = 0; g < n.size(); ++g) {
    const JsonNode group = n.at(g);
    group.expect_array();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < group.size(); ++i) names.push_back(group.at(i).as_string());
    groups.push_back(std::move(names));
  }
  return groups;
}

TableConstraints table_constraints_from(const JsonNode& n) {
  n.only_keys({"sharding_types", "allow_uvm", "min_partition"});
  TableConstraints c;
  if (n.has("sharding_types")) {
    const JsonNode types = n.at("sharding_types");
    types.expect_array();
    if (types.size() == 0) types.fail("names no sharding type (leave it out to allow any)");
    for (std::size_t i = 0; i < types.size(); ++i)
      c.sharding_types.push_back(parse_sharding_type(types.at(i).as_string(), types.at(i).label()));
  }
  if (n.has("allow_uvm")) c.allow_uvm = n.at("allow_uvm").as_bool();
  if (n.has("min_partition")) c.min_partition = static_cast<int>(n.at("min_partition").as_int(0, kMaxTableDim));
  return c;
}

json table_constraints_json(const TableConstraints& c) {
  json j = json::object();
  if (!c.sharding_types.empty()) {
    json types = json::array();
    for (ShardingType t : c.sharding_types) types.push_back(to_string(t));
    j["sharding_types"] = types;
  }
  if (!c.allow_uvm) j["allow_uvm"] = false;
  if (c.min_partition != 0) j["min_partition"] = c.min_partition;
  return j;
}

TableSpec table_from(const JsonNode& n, std::int64_t batch_size, const Pool* pool, const DerivedStatsModel& model,
                     DerivedStatsMemo& memo, PoolStatsMemo& pool_memo) {
  n.only_keys(
      {"name", "dim", "dtype", "pool_id", "source_id", "stats", "stats_origin", "optimizer", "constraints", "pooled"});
  TableSpec t;
  t.name = n.at("name").as_string();
  t.dim = static_cast<int>(n.at("dim").as_int(1, kMaxTableDim));
  t.dtype = n.has("dtype") ? parse_weight_type(n.at("dtype").as_string(), n.at("dtype").label()) : WeightType::kF32;
  if (n.has("source_id")) t.source_id = n.at("source_id").as_int(0);
  if (n.has("pool_id")) t.source_id = n.at("pool_id").as_int(0);
  if (n.has("stats_origin")) t.stats_origin = n.at("stats_origin").as_string();
  if (n.has("optimizer")) t.optimizer = parse_optimizer_state(n.at("optimizer").as_string(), n.at("optimizer").label());
  if (n.has("constraints")) t.constraints = table_constraints_from(n.at("constraints"));
  if (n.has("pooled")) t.pooled = n.at("pooled").as_bool();
  if (n.has("stats")) {
    const JsonNode s = n.at("stats");
    const std::string where = detail::concat(s.label(), " (table '", t.name, "')");
    if (s.has("bins")) {
      s.only_keys({EMBSHARD_STATS_KEYS});
      t.stats = stats_from(s, where);
    } else {
      if (n.has("stats_origin")) n.at("stats_origin").fail("is set on a table whose statistics are derived");
      t.stats = derived_stats_from(s, batch_size, model, where, memo);
      t.stats_origin = model.origin();
    }
  } else {
    if (!n.has("pool_id")) n.fail("a table needs 'stats' or 'pool_id'");
    EMBSHARD_ASSERT(pool != nullptr);
    const auto pool_size = static_cast<std::int64_t>(pool->tables().size());
    if (t.source_id >= pool_size)
      n.at("pool_id").fail(detail::concat("got ", t.source_id, ", but the pool has ", pool_size, " tables (ids 0 to ",
                                          pool_size - 1, ")"));
    auto [it, added] = pool_memo.try_emplace(t.source_id);
    if (added) it->second = pool->expected_stats(t.source_id, batch_size);
    t.stats = it->second;
  }
  return t;
}

}  // namespace

std::string stats_to_json(const std::vector<TableStats>& tables) {
  json arr = json::array();
  for (const auto& s : tables) arr.push_back(stats_json(s));
  return json{{"tables", arr}}.dump(1) + "\n";
}

std::vector<TableStats> stats_from_json(const std::string& text, const std::string& where) {
  const json doc = detail::parse_json(text, where);
  const JsonNode root(doc, where);
  root.expect_object();
  const JsonNode tables = root.at("tables");
  tables.expect_array();
  if (tables.size() > static_cast<std::size_t>(kMaxTasksTables))
    tables.fail(detail::concat(tables.size(), " tables, more than ", kMaxTasksTables));
  std::vector<TableStats> out;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const JsonNode t = tables.at(i);
    t.only_keys({EMBSHARD_STATS_KEYS, "id", "name", "generator"});
    std::string at = t.label();
    if (t.has("name")) at += " (table '" + t.at("name").as_string() + "')";
    out.push_back(stats_from(t, at));
  }
  return out;
}

std::vector<TableStats> read_stats_file(const std::string& path) { return stats_from_json(read_file(path), path); }

void write_stats_file(const std::string& path, const std::vector<TableStats>& tables) {
  write_file_atomic(path, stats_to_json(tables));
}

std::string pool_to_json(const Pool& pool, std::int64_t batch_size, int threads) {
  const std::vector<TableStats> stats = pool.all_expected_stats(batch_size, threads);
  json arr = json::array();
  for (const PoolTable& t : pool.tables()) {
    json j = stats_json(stats[static_cast<std::size_t>(t.id)]);
    j["id"] = t.id;
    j["generator"] = {{"num_rows", t.num_rows},       {"active_rows", t.active_rows},   {"zipf_alpha", t.zipf_alpha},
                      {"zipf_offset", t.zipf_offset}, {"length_shape", t.length_shape}, {"seed", t.seed}};
    arr.push_back(std::move(j));
  }
  const PoolParams& p = pool.params();
  json params = {{"empty_share", p.empty_share},
                 {"rows_low_log10_min", p.rows_low_log10_min},
                 {"rows_high_log10_min", p.rows_high_log10_min},
                 {"pooling_min", p.pooling_min},
                 {"coverage_full_share", p.coverage_full_share},
                 {"coverage_log10_min", p.coverage_log10_min},
                 {"alpha_min", p.alpha_min},
                 {"alpha_max", p.alpha_max},
                 {"active_log10_min", p.active_log10_min},
                 {"active_log10_max", p.active_log10_max},
                 {"offset_log10_max", p.offset_log10_max},
                 {"length_shape", p.length_shape}};
  json doc = {{"pool", {{"seed", pool.seed()}, {"version", kPoolVersion}, {"params", params}}}, {"tables", arr}};
  return doc.dump(1) + "\n";
}

std::string task_to_json(const Task& task) {
  json tables = json::array();
  bool from_pool = false;
  for (const TableSpec& t : task.workload.tables) {
    json j = {{"name", t.name}, {"dim", t.dim}, {"dtype", to_string(t.dtype)}};
    if (t.source_id >= 0) {
      j["pool_id"] = t.source_id;
      from_pool = true;
    }
    j["stats"] = stats_json(t.stats);
    if (!t.stats_origin.empty()) j["stats_origin"] = t.stats_origin;
    if (t.optimizer != OptimizerState::kNone) j["optimizer"] = to_string(t.optimizer);
    if (!t.constraints.is_default()) j["constraints"] = table_constraints_json(t.constraints);
    if (!t.pooled) j["pooled"] = false;
    tables.push_back(std::move(j));
  }
  json doc = {{"schema_version", kTaskSchemaVersion},
              {"id", task.id},
              {"protocol", task.protocol},
              {"seed", task.seed},
              {"batch_size", task.workload.batch_size},
              {"topology", topology_json(task.topology)},
              {"constraints",
               {{"allow_column_split", task.constraints.allow_column_split},
                {"allow_row_split", task.constraints.allow_row_split},
                {"allow_uvm", task.constraints.allow_uvm}}},
              {"tables", tables}};
  if (!task.constraints.groups.colocate.empty()) doc["constraints"]["colocate"] = task.constraints.groups.colocate;
  if (!task.constraints.groups.separate.empty()) doc["constraints"]["separate"] = task.constraints.groups.separate;
  if (from_pool) doc["pool_seed"] = task.pool_seed;
  if (task.workload.replica_sync_every != 1) doc["replica_sync_every"] = task.workload.replica_sync_every;
  return doc.dump(1) + "\n";
}

Task task_from_json(const std::string& text, const std::string& where) {
  const json doc = detail::parse_json(text, where);
  const JsonNode root(doc, where);
  root.only_keys({"schema_version", "id", "protocol", "seed", "batch_size", "replica_sync_every", "topology",
                  "constraints", "pool_seed", "derived_stats", "tables"});
  const JsonNode version_node = root.at("schema_version");
  const std::int64_t version = version_node.as_int();
  if (version != kTaskSchemaVersion)
    version_node.fail(detail::concat("version ", version, " is not supported (this build reads task schema version ",
                                     kTaskSchemaVersion, " only)"));
  Task task;
  task.id = root.has("id") ? root.at("id").as_string() : "";
  task.protocol = root.has("protocol") ? root.at("protocol").as_string() : "";
  task.seed = root.has("seed") ? root.at("seed").as_uint64() : 0;
  task.workload.batch_size = root.at("batch_size").as_int(1, kMaxBatchSize);
  if (root.has("replica_sync_every"))
    task.workload.replica_sync_every = static_cast<int>(root.at("replica_sync_every").as_int(1, kMaxSyncEvery));
  task.topology = topology_from(root.at("topology"));
  if (root.has("constraints")) {
    const JsonNode c = root.at("constraints");
    c.only_keys({"allow_column_split", "allow_row_split", "allow_uvm", "colocate", "separate"});
    if (c.has("allow_column_split")) task.constraints.allow_column_split = c.at("allow_column_split").as_bool();
    if (c.has("allow_row_split")) task.constraints.allow_row_split = c.at("allow_row_split").as_bool();
    if (c.has("allow_uvm")) task.constraints.allow_uvm = c.at("allow_uvm").as_bool();
    if (c.has("colocate")) task.constraints.groups.colocate = table_groups_from(c.at("colocate"));
    if (c.has("separate")) task.constraints.groups.separate = table_groups_from(c.at("separate"));
  }
  task.pool_seed = root.has("pool_seed") ? root.at("pool_seed").as_uint64() : 0;
  const DerivedStatsModel model =
      root.has("derived_stats") ? derived_model_from(root.at("derived_stats")) : pool_median_model();
  std::unique_ptr<Pool> pool;
  DerivedStatsMemo memo;
  PoolStatsMemo pool_memo;
  const JsonNode tables = root.at("tables");
  tables.expect_array();
  if (tables.size() > static_cast<std::size_t>(kMaxTasksTables))
    tables.fail(detail::concat(tables.size(), " tables, more than ", kMaxTasksTables));
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const JsonNode t = tables.at(i);
    t.expect_object();
    if (!t.has("stats") && !pool) pool = std::make_unique<Pool>(Pool::generate(task.pool_seed));
    task.workload.tables.push_back(table_from(t, task.workload.batch_size, pool.get(), model, memo, pool_memo));
  }
  check_task(task, where);
  return task;
}

Task read_task_file(const std::string& path) { return task_from_json(read_file(path), path); }

void write_task_file(const std::string& path, const Task& task) { write_file_atomic(path, task_to_json(task)); }

}  // namespace embshard
