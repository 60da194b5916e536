#include "core/json_reader.h"

#include <simdjson.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <new>
#include <optional>
#include <set>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace embshard::detail {
namespace {

using Json = nlohmann::json;

/**
 * Builds a document from SAX events through nlohmann's public API (its own builder is an internal
 * class whose template changed in 3.12). The open containers are held by pointer: a container's
 * storage does not move while one of its children is open.
 */
class DomBuilder {
 public:
  explicit DomBuilder(Json& root) : root_(root) {}
  /** A value: the document, the next entry of the open array or the member named last. */
  Json* put(Json value) {
    if (open_.empty()) return &(root_ = std::move(value));
    Json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    return &(parent[key_] = std::move(value));
  }
  void key(const std::string& key) { key_ = key; }
  void open(Json container) { open_.push_back(put(std::move(container))); }
  void close() { open_.pop_back(); }

 private:
  Json& root_;
  std::vector<Json*> open_;
  std::string key_;
};

/**
 * A SAX pass over a document that catches an object naming a key twice and names the JSON path
 * of the repeated key, and, given a DOM builder, builds the document in the same pass. (nlohmann's
 * callback parser, the other way to see keys, scans the parent container at every object's end,
 * quadratic in a long array of objects: a 200,000-shard plan took seconds; SAX is linear.)
 */
class DuplicateKeyCheck final : public nlohmann::json_sax<Json> {
 public:
  /** Only counts and checks; with `dom`, each value also goes to it. */
  explicit DuplicateKeyCheck(const std::string& where, DomBuilder* dom = nullptr) : where_(where), dom_(dom) {}

  /** Values read so far (each scalar, object and array counts one). */
  [[nodiscard]] std::uint64_t values() const { return values_; }
  /** Object members and bytes of strings read so far (keys included). */
  [[nodiscard]] std::uint64_t members() const { return members_; }
  [[nodiscard]] std::uint64_t string_bytes() const { return string_bytes_; }

  bool null() override { return scalar(nullptr); }
  bool boolean(bool v) override { return scalar(v); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(v); }
  bool string(string_t& text) override {
    string_bytes_ += text.size();
    return scalar(text);
  }
  bool binary(binary_t& v) override { return scalar(Json::binary(v)); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    on_key(key);
    if (dom_) dom_->key(key);
    return true;
  }
  /** Rethrows nlohmann's error, so parse_json reports every malformed document alike. */
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override { throw e; }

 private:
  /** One object or array being read. */
  struct Level {
    bool is_object = false;
    std::string key;             ///< objects: the member being read
    std::size_t entries = 0;     ///< arrays: entries started so far
    std::set<std::string> seen;  ///< objects: keys read so far
  };

  /** A value starts: in an array, it is the next entry. */
  void count_entry() {
    ++values_;
    if (!levels_.empty() && !levels_.back().is_object) ++levels_.back().entries;
  }

  bool scalar(Json value) {
    count_entry();
    if (dom_) dom_->put(std::move(value));
    return true;
  }

  bool open(Json container) {
    const bool is_object = container.is_object();
    count_entry();
    if (levels_.size() >= kMaxJsonDepth)
      EMBSHARD_THROW(where_, ": ", printable(path()), ": nested deeper than ", kMaxJsonDepth,
                     " levels (no embshard file nests more than a few)");
    levels_.push_back({is_object, {}, 0, {}});
    if (dom_) dom_->open(std::move(container));
    return true;
  }

  bool close() {
    levels_.pop_back();
    if (dom_) dom_->close();
    return true;
  }

  void on_key(const std::string& key) {
    ++members_;
    string_bytes_ += key.size();
    Level& level = levels_.back();
    level.key = key;
    if (!level.seen.insert(key).second)
      EMBSHARD_THROW(where_, ": ", printable(path()), ": duplicate key (an object names it twice)");
  }

  [[nodiscard]] std::string path() const {
    std::string out;
    for (const Level& level : levels_) {
      if (level.is_object)
        out += (out.empty() ? "" : ".") + level.key;
      else
        out += "[" + std::to_string(level.entries - 1) + "]";
    }
    return out;
  }

  const std::string& where_;
  DomBuilder* dom_ = nullptr;
  std::vector<Level> levels_;
  std::uint64_t values_ = 0;
  std::uint64_t members_ = 0;
  std::uint64_t string_bytes_ = 0;
};

/** json_dom_bytes (json_reader.h) of what `counts` has read. */
std::uint64_t dom_bytes_estimate(const DuplicateKeyCheck& counts) {
  return counts.values() * 16 + counts.members() * 80 + counts.string_bytes();
}

/** nlohmann's message without its "[json.exception.name.id] " prefix. */
std::string without_exception_id(const std::string& what) {
  const auto end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

std::string join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string expected_integer(std::int64_t min) {
  if (min == std::numeric_limits<std::int64_t>::min()) return "expected an integer";
  return "expected an integer ≥ " + std::to_string(min);
}

std::string expected_number(double min) {
  if (min == -std::numeric_limits<double>::infinity()) return "expected a number";
  return concat("expected a number ≥ ", min);
}

}  // namespace

std::string printable(const std::string& text, bool keep_utf8) {
  constexpr std::size_t kMaxBytes = 200;
  std::string out;
  for (const char c : text.substr(0, kMaxBytes)) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = byte >= 0x20 && byte != 0x7f && (keep_utf8 || byte < 0x80);
    if (plain) {
      out += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  return text.size() > kMaxBytes ? out + "..." : out;
}

std::string describe_json(const Json& value) {
  if (value.is_number()) return value.dump();
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  if (value.is_boolean()) return "a boolean";
  return "null";
}

namespace {

/** Runs `handler` over `text`, a malformed document (or a number too large) an Error naming `where`. */
void read_events(const std::string& text, const std::string& where, DuplicateKeyCheck& handler) {
  try {
    Json::sax_parse(text, &handler);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number too large
    EMBSHARD_THROW(where, ": malformed JSON: ", printable(without_exception_id(e.what()), false));
  }
}

/** Whether the fast path may hold its tape beside the document (parse_json): a tape entry or two per value. */
constexpr std::uint64_t kMostTapeBytesPerTextByte = 16;

/**
 * `element` built as nlohmann's document into `out`; false wherever the reference parser must
 * decide instead (parse_fast): an object naming a key twice, nesting deeper than kMaxJsonDepth, a
 * number nlohmann reads otherwise (-0 as an integer; none is non-finite). Numbers keep nlohmann's
 * kinds: a non-negative integer unsigned, a negative one signed, any other a double — both parsers
 * round a decimal to the nearest double.
 */
bool build_json(simdjson::dom::element element, std::size_t depth, Json& out) {
  using Kind = simdjson::dom::element_type;
  switch (element.type()) {
    case Kind::OBJECT: {
      if (depth >= kMaxJsonDepth) return false;
      out = Json::object();
      auto& members = out.get_ref<Json::object_t&>();
      for (const simdjson::dom::key_value_pair member : simdjson::dom::object(element)) {
        const auto [at, fresh] = members.try_emplace(std::string(member.key));
        if (!fresh || !build_json(member.value, depth + 1, at->second)) return false;
      }
      return true;
    }
    case Kind::ARRAY: {
      if (depth >= kMaxJsonDepth) return false;
      out = Json::array();
      auto& entries = out.get_ref<Json::array_t&>();
      const simdjson::dom::array array(element);
      entries.reserve(array.size());
      for (const simdjson::dom::element entry : array)
        if (!build_json(entry, depth + 1, entries.emplace_back())) return false;
      return true;
    }
    case Kind::INT64: {
      const std::int64_t v = element.get_int64().value_unsafe();
      out = v >= 0 ? Json(static_cast<std::uint64_t>(v)) : Json(v);
      return true;
    }
    case Kind::UINT64: out = element.get_uint64().value_unsafe(); return true;
    case Kind::DOUBLE: {
      const double v = element.get_double().value_unsafe();
      out = v;
      return std::isfinite(v) && !(v == 0.0 && std::signbit(v));
    }
    case Kind::STRING: out = std::string(element.get_string().value_unsafe()); return true;
    case Kind::BOOL: out = element.get_bool().value_unsafe(); return true;
    case Kind::NULL_VALUE: out = nullptr; return true;
  }
  return false;
}

/**
 * parse_json's fast path: simdjson's parser (SIMD scanning, exact number parsing), the document then
 * built as nlohmann's — about 4× faster on embshard's large task files. Nothing where the reference
 * path (nlohmann's SAX with DuplicateKeyCheck) must decide: whatever simdjson refuses, what
 * build_json refuses, and a document whose tape might not fit in memory beside it.
 */
std::optional<Json> parse_fast(const std::string& text) {
  try {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(text).get(root) != simdjson::SUCCESS) return std::nullopt;
    Json document;
    if (!build_json(root, 0, document)) return std::nullopt;
    return document;
  } catch (const std::bad_alloc&) {
    return std::nullopt;
  }
}

}  // namespace

Json parse_json(const std::string& text, const std::string& where) {
  const auto text_bytes = static_cast<std::uint64_t>(text.size());
  if (find_memory_shortfall(text_bytes * (kMostDomBytesPerTextByte + kMostTapeBytesPerTextByte), "").empty())
    if (std::optional<Json> document = parse_fast(text)) return std::move(*document);
  return parse_json_reference(text, where);
}

Json parse_json_reference(const std::string& text, const std::string& where) {
  DuplicateKeyCheck check(where);
  Json document;
  DomBuilder dom(document);
  DuplicateKeyCheck build(where, &dom);  // checks and builds in one pass
  try {
    const auto text_bytes = static_cast<std::uint64_t>(text.size());
    if (!find_memory_shortfall(text_bytes * kMostDomBytesPerTextByte, "").empty()) {
      // It might not fit: count first, and refuse before building anything.
      read_events(text, where, check);
      check_fits_in_memory(dom_bytes_estimate(check), concat(where, ": reading its ", check.values(), " JSON values"));
    }
    read_events(text, where, build);
    return document;
  } catch (const std::bad_alloc&) {  // the estimate above was short, or memory went meanwhile
    EMBSHARD_THROW(where, ": out of memory reading its JSON values (", std::max(check.values(), build.values()),
                   " read, ", static_cast<double>(text.size()) / (1 << 20), " MiB of text)");
  }
}

bool identical_json(const Json& a, const Json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
      if (i.key() != j.key() || !identical_json(*i, *j)) return false;
    return true;
  }
  if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!identical_json(a[i], b[i])) return false;
    return true;
  }
  if (a.is_number_float())
    return std::bit_cast<std::uint64_t>(a.get<double>()) == std::bit_cast<std::uint64_t>(b.get<double>());
  return a == b;
}

std::uint64_t json_dom_bytes(const std::string& text, const std::string& where) {
  DuplicateKeyCheck check(where);
  read_events(text, where, check);
  return dom_bytes_estimate(check);
}

// ---- JsonNode -------------------------------------------------------------------------------

JsonNode::JsonNode(const Json& document, std::string where) : JsonNode(document, std::move(where), "") {}

std::string JsonNode::label() const { return where_ + ": " + (path_.empty() ? "top level" : printable(path_)); }

void JsonNode::fail(const std::string& problem) const { EMBSHARD_THROW(label(), ": ", problem); }

std::string JsonNode::member_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void JsonNode::fail_member(const std::string& key, const std::string& problem) const {
  EMBSHARD_THROW(where_, ": ", printable(member_path(key)), ": ", problem);
}

void JsonNode::expect_object() const {
  if (!value_->is_object()) fail("expected an object, got " + describe_json(*value_));
}

void JsonNode::only_keys(std::initializer_list<const char*> allowed) const {
  expect_object();
  for (const auto& item : value_->items()) {
    bool known = false;
    for (const char* name : allowed) known = known || item.key() == name;
    if (!known) fail_member(item.key(), "unknown field (expected " + join(allowed) + ")");
  }
}

void JsonNode::expect_array(std::size_t min_size) const {
  if (!value_->is_array()) fail("expected an array, got " + describe_json(*value_));
  if (value_->size() < min_size) fail(concat("expected at least ", min_size, " entries, got ", value_->size()));
}

bool JsonNode::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonNode JsonNode::at(const std::string& key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end()) fail_member(key, "missing required field");
  return JsonNode(*it, where_, member_path(key));
}

JsonNode JsonNode::at(std::size_t index) const {
  EMBSHARD_ASSERT(value_->is_array() && index < value_->size());
  return JsonNode((*value_)[index], where_, path_ + "[" + std::to_string(index) + "]");
}

std::size_t JsonNode::size() const { return value_->is_array() || value_->is_object() ? value_->size() : 0; }

std::int64_t JsonNode::as_int(std::int64_t min, std::int64_t max) const {
  const Json& v = *value_;
  const auto too_small = [&] { fail(expected_integer(min) + ", got " + describe_json(v)); };
  const auto too_large = [&] { fail("got " + describe_json(v) + ", more than the maximum " + std::to_string(max)); };
  if (!v.is_number_integer()) too_small();
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (max < 0 || u > static_cast<std::uint64_t>(max)) too_large();
    if (static_cast<std::int64_t>(u) < min) too_small();
    return static_cast<std::int64_t>(u);
  }
  const auto n = v.get<std::int64_t>();
  if (n < min) too_small();
  if (n > max) too_large();
  return n;
}

std::uint64_t JsonNode::as_uint64() const {
  const Json& v = *value_;
  const bool ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
  if (!ok) fail("expected an integer ≥ 0, got " + describe_json(v));
  return v.get<std::uint64_t>();
}

double JsonNode::as_double(double min) const {
  const Json& v = *value_;
  if (!v.is_number()) fail(expected_number(min) + ", got " + describe_json(v));
  const double d = v.get<double>();
  if (!std::isfinite(d) || !(d >= min)) fail(expected_number(min) + ", got " + describe_json(v));
  return d;
}

std::vector<double> JsonNode::as_doubles(double min) const {
  expect_array();
  std::vector<double> out;
  out.reserve(value_->size());
  for (const Json& v : *value_) {
    const double d = v.is_number() ? v.get<double>() : 0.0;
    // The entry's node (and its path) is made only for an entry to complain about.
    if (!v.is_number() || !std::isfinite(d) || !(d >= min)) (void)at(out.size()).as_double(min);
    out.push_back(d);
  }
  return out;
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe_json(*value_));
  return value_->get<bool>();
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe_json(*value_));
  return value_->get<std::string>();
}

}  // namespace embshard::detail
