#include "embshard/plan/plan_io.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace embshard {
namespace {

using Json = nlohmann::json;

// ---- writing ---------------------------------------------------------------------------------

std::string json_string(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

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
      << "    \"created_utc\": " << json_string(p.created_utc) << "\n"
      << "  },\n";
}

void write_shard(std::ostringstream& out, const Shard& s) {
  out << "      {\"device\": " << s.device << ", \"rows\": " << json_range(s.row_begin, s.row_end)
      << ", \"cols\": " << json_range(s.col_begin, s.col_end)
      << ", \"hbm_rows\": " << s.rows_in_hbm() << "}";
}

void write_table(std::ostringstream& out, const TablePlacement& tp) {
  out << "    {\"table\": " << json_string(tp.table) << ", \"sharding_type\": \""
      << to_string(tp.type) << "\", \"shards\": [";
  for (std::size_t i = 0; i < tp.shards.size(); ++i) {
    out << (i == 0 ? "\n" : ",\n");
    write_shard(out, tp.shards[i]);
  }
  out << (tp.shards.empty() ? "]}" : "\n    ]}");
}

// ---- reading ---------------------------------------------------------------------------------

/**
 * `text` cut to 200 bytes, with control characters written as \xNN so that a message stays on
 * one line, and with all bytes above 0x7f escaped too unless `keep_utf8` (nlohmann's messages may
 * quote a broken UTF-8 sequence).
 */
std::string printable(const std::string& text, bool keep_utf8) {
  constexpr std::size_t kMaxBytes = 200;
  std::string out;
  for (const char c : text.substr(0, kMaxBytes)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f && (keep_utf8 || byte < 0x80)) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", byte);
      out += buf;
    }
  }
  return text.size() > kMaxBytes ? out + "..." : out;
}

/// Where a value sits: the file and its JSON path.
struct At {
  const std::string& where;
  std::string path;

  [[nodiscard]] At key(const std::string& name) const {
    return {where, path.empty() ? name : path + "." + name};
  }
  [[nodiscard]] At index(std::size_t i) const {
    return {where, path + "[" + std::to_string(i) + "]"};
  }
  [[noreturn]] void fail(const std::string& problem) const {
    EMBSHARD_THROW(where, ": ", path.empty() ? "top level" : printable(path, true), ": ", problem);
  }
};

std::string describe(const Json& j) {
  if (j.is_number()) return j.dump();
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  if (j.is_boolean()) return "a boolean";
  return "null";
}

std::string join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

/// Requires an object whose keys are all in `allowed` (unless `allow_unknown`).
void check_object(const Json& j, const At& at, std::initializer_list<const char*> allowed,
                  bool allow_unknown = false) {
  if (!j.is_object()) at.fail("expected an object, got " + describe(j));
  if (allow_unknown) return;
  for (const auto& item : j.items()) {
    bool known = false;
    for (const char* name : allowed) known = known || item.key() == name;
    if (!known) at.key(item.key()).fail("unknown field (expected " + join(allowed) + ")");
  }
}

const Json& require(const Json& obj, const At& at, const char* name) {
  const auto it = obj.find(name);
  if (it == obj.end()) at.key(name).fail("missing required field");
  return *it;
}

std::int64_t read_count(const Json& j, const At& at, std::int64_t max) {
  const std::string expected = "expected an integer ≥ 0, got ";
  if (!j.is_number_integer()) at.fail(expected + describe(j));
  if (j.is_number_unsigned()) {
    const auto v = j.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(max))
      at.fail("got " + describe(j) + ", more than the maximum " + std::to_string(max));
    return static_cast<std::int64_t>(v);
  }
  const auto v = j.get<std::int64_t>();
  if (v < 0) at.fail(expected + describe(j));
  if (v > max) at.fail("got " + describe(j) + ", more than the maximum " + std::to_string(max));
  return v;
}

int read_int(const Json& j, const At& at) { return static_cast<int>(read_count(j, at, INT_MAX)); }

std::pair<std::int64_t, std::int64_t> read_range(const Json& j, const At& at, std::int64_t max) {
  if (!j.is_array() || j.size() != 2)
    at.fail("expected [begin, end] (two integers ≥ 0), got " +
            (j.is_array() ? "an array of " + std::to_string(j.size()) : describe(j)));
  return {read_count(j[0], at.index(0), max), read_count(j[1], at.index(1), max)};
}

std::string read_string(const Json& j, const At& at) {
  if (!j.is_string()) at.fail("expected a string, got " + describe(j));
  return j.get<std::string>();
}

double read_duration(const Json& j, const At& at) {
  if (!j.is_number()) at.fail("expected a number ≥ 0, got " + describe(j));
  const double v = j.get<double>();
  if (!(v >= 0.0) || !std::isfinite(v)) at.fail("expected a number ≥ 0, got " + describe(j));
  return v;
}

std::uint64_t read_seed(const Json& j, const At& at) {
  if (!j.is_number_integer()) at.fail("expected an integer ≥ 0, got " + describe(j));
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  const auto v = j.get<std::int64_t>();
  if (v < 0) at.fail("expected an integer ≥ 0, got " + describe(j));
  return static_cast<std::uint64_t>(v);
}

Provenance read_provenance(const Json& j, const At& at) {
  check_object(j, at, {}, /*allow_unknown=*/true);
  Provenance p;
  const auto text = [&](const char* name, std::string& field) {
    if (const auto it = j.find(name); it != j.end()) field = read_string(*it, at.key(name));
  };
  text("sharder", p.sharder);
  text("cost_model", p.cost_model);
  text("task_id", p.task_id);
  text("embshard_version", p.embshard_version);
  text("created_utc", p.created_utc);
  if (const auto it = j.find("seed"); it != j.end()) p.seed = read_seed(*it, at.key("seed"));
  if (const auto it = j.find("wall_ms"); it != j.end())
    p.wall_ms = read_duration(*it, at.key("wall_ms"));
  return p;
}

Shard read_shard(const Json& j, const At& at) {
  check_object(j, at, {"device", "rows", "cols", "hbm_rows"});
  constexpr std::int64_t kMaxRows = std::numeric_limits<std::int64_t>::max();
  Shard s;
  s.device = read_int(require(j, at, "device"), at.key("device"));
  std::tie(s.row_begin, s.row_end) = read_range(require(j, at, "rows"), at.key("rows"), kMaxRows);
  const auto cols = read_range(require(j, at, "cols"), at.key("cols"), INT_MAX);
  s.col_begin = static_cast<int>(cols.first);
  s.col_end = static_cast<int>(cols.second);
  if (const auto it = j.find("hbm_rows"); it != j.end())
    s.hbm_rows = read_count(*it, at.key("hbm_rows"), kMaxRows);
  return s;
}

TablePlacement read_table(const Json& j, const At& at) {
  check_object(j, at, {"table", "sharding_type", "shards"});
  TablePlacement tp;
  tp.table = read_string(require(j, at, "table"), at.key("table"));
  const At type_at = at.key("sharding_type");
  const std::string type = read_string(require(j, at, "sharding_type"), type_at);
  tp.type = parse_sharding_type(type, at.where + ": " + type_at.path);
  const Json& shards = require(j, at, "shards");
  if (!shards.is_array()) at.key("shards").fail("expected an array, got " + describe(shards));
  tp.shards.reserve(shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i)
    tp.shards.push_back(read_shard(shards[i], at.key("shards").index(i)));
  return tp;
}

/// One level of the JSON being parsed, to name the path of a repeated key.
struct Frame {
  bool is_object = false;
  std::string key;
  std::int64_t index = -1;
  std::set<std::string> keys;
};

std::string frames_path(const std::vector<Frame>& frames) {
  std::string path;
  for (const Frame& f : frames) {
    if (f.is_object)
      path += (path.empty() ? "" : ".") + f.key;
    else
      path += "[" + std::to_string(f.index) + "]";
  }
  return path;
}

/// Parses `text`, rejecting objects that name a key twice (nlohmann would keep the last one).
Json parse_strict(const std::string& text, const std::string& where) {
  std::vector<Frame> frames;
  const auto enter_child = [&frames] {
    if (!frames.empty() && !frames.back().is_object) ++frames.back().index;
  };
  const Json::parser_callback_t callback = [&](int, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        enter_child();
        frames.push_back({event == E::object_start, "", -1, {}});
        break;
      case E::key:
        frames.back().key = parsed.get<std::string>();
        if (!frames.back().keys.insert(frames.back().key).second)
          At{where, frames_path(frames)}.fail("duplicate key (an object names it twice)");
        break;
      case E::value:
        enter_child();
        break;
      case E::object_end:
      case E::array_end:
        frames.pop_back();
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, callback);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number too large
    const std::string what = e.what();
    const auto start = what.find("] ");
    EMBSHARD_THROW(where, ": malformed JSON: ",
                   printable(start == std::string::npos ? what : what.substr(start + 2), false));
  }
}

}  // namespace

std::string plan_to_json(const Plan& plan) {
  std::ostringstream out;
  out << "{\n  \"schema_version\": " << kPlanSchemaVersion << ",\n";
  write_provenance(out, plan.provenance);
  out << "  \"tables\": [";
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    out << (i == 0 ? "\n" : ",\n");
    write_table(out, plan.tables[i]);
  }
  out << (plan.tables.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return out.str();
}

Plan plan_from_json(const std::string& text, const std::string& where) {
  const Json root = parse_strict(text, where);
  const At at{where, ""};
  check_object(root, at, {"schema_version", "provenance", "tables"});
  const Json& version = require(root, at, "schema_version");
  const At version_at = at.key("schema_version");
  if (!version.is_number_integer())
    version_at.fail("expected an integer, got " + describe(version));
  if (version != kPlanSchemaVersion)
    version_at.fail("version " + describe(version) +
                    " is not supported (this build reads version " +
                    std::to_string(kPlanSchemaVersion) + " only)");
  Plan plan;
  if (const auto it = root.find("provenance"); it != root.end())
    plan.provenance = read_provenance(*it, at.key("provenance"));
  const Json& tables = require(root, at, "tables");
  if (!tables.is_array()) at.key("tables").fail("expected an array, got " + describe(tables));
  plan.tables.reserve(tables.size());
  for (std::size_t i = 0; i < tables.size(); ++i)
    plan.tables.push_back(read_table(tables[i], at.key("tables").index(i)));
  return plan;
}

void write_plan_file(const std::string& path, const Plan& plan) {
  write_file_atomic(path, plan_to_json(plan));
}

Plan read_plan_file(const std::string& path) { return plan_from_json(read_file(path), path); }

}  // namespace embshard
