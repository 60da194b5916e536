#pragma once
/**
 * @file json_reader.h
 * @brief Strict, path-aware reading of JSON documents (private to the library).
 *
 * Every reader of a JSON file (stats, pool, task and plan files) goes through this helper so that
 * all of them reject the same mistakes with the same kind of message: one line
 *
 *   `<where>: <json.path>: <problem>`, e.g. `plan.json: tables[3].shards[0].device: expected an
 *   integer ≥ 0, got -1`
 *
 * where `<where>` names the source (usually a file name), `<json.path>` is the path of the value
 * (`top level` for the document itself) and `<problem>` says what is wrong. Control bytes in the
 * path are escaped and long paths are cut, so a message always stays on one line.
 *
 * Strictness: `parse_json` rejects malformed JSON (naming line and column), numbers too large for
 * a double, objects that name a key twice, nesting deeper than `kMaxJsonDepth` and documents
 * whose parsed form would not fit in the memory available (estimated before it is built);
 * `JsonNode` rejects wrong types, missing fields,
 * numbers out of range and, where the caller asks (`only_keys`), unknown keys.
 *
 * Speed: `parse_json` parses with simdjson first and builds nlohmann's document from its tape,
 * about 3× faster than nlohmann's own parser on a large task file; its reference path decides
 * whatever that fast path does not take (`parse_json_reference`).
 *
 * nlohmann/json and simdjson are private dependencies: include this header only from `src/`, never
 * from a public header under `include/` (simdjson only from json_reader.cpp).
 */
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace embshard::detail {

/** The deepest nesting of objects and arrays `parse_json` reads; embshard's files nest ~5 deep. */
inline constexpr std::size_t kMaxJsonDepth = 128;

/**
 * `text` cut to its first 200 bytes (then "..." appended), with control bytes written as `\xNN`
 * so that it fits on one line. Bytes above 0x7f are kept when `keep_utf8` and escaped otherwise
 * (for text that may hold broken UTF-8, such as nlohmann's quotes of the input).
 */
[[nodiscard]] std::string printable(const std::string& text, bool keep_utf8 = true);

/** A short description of a JSON value for "got ..." messages: a number itself, else its kind. */
[[nodiscard]] std::string describe_json(const nlohmann::json& value);

/**
 * Parses `text` strictly. Throws `Error` naming `where` for malformed JSON
 * (`<where>: malformed JSON: parse error at line L, column C: ...`), for a number too large to
 * represent, and for an object that names a key twice (`<where>: <path>: duplicate key ...`),
 * which nlohmann would otherwise resolve silently by keeping the last value. Nesting deeper than
 * `kMaxJsonDepth` (`<where>: <path>: nested deeper than 128 levels …`) is an error found before
 * the level is built. The document is checked and built in one pass (SAX; it keeps the open
 * objects' keys, to find duplicates). Where the text times `kMostDomBytesPerTextByte` might not
 * fit in memory, a first pass that builds nothing counts the values (`json_dom_bytes`), and a
 * document whose parsed form would not fit is refused before it is built (`<where>: reading its
 * N JSON values needs about X GiB of memory but Y GiB is available`).
 */
[[nodiscard]] nlohmann::json parse_json(const std::string& text, const std::string& where);

/**
 * parse_json's reference path, which alone decides every document the fast one does not take.
 * `parse_json` first parses with simdjson (Debian's libsimdjson-dev: SIMD scanning, exact number
 * parsing) and builds the same nlohmann document from its tape; wherever simdjson refuses the text,
 * an object names a key twice, the nesting passes `kMaxJsonDepth`, a number is `-0` or memory is
 * short for the tape too, it returns what this returns — the document or the one-line error above.
 * The two agree on every document both take (tests/core/json_reader_test.cpp), numbers included:
 * a non-negative integer is unsigned, a negative one signed, any other number a double rounded to
 * the nearest.
 */
[[nodiscard]] nlohmann::json parse_json_reference(const std::string& text, const std::string& where);

/** Whether `a` and `b` are the same document down to each number's kind and bits (nlohmann's ==
 *  takes 1 for 1.0 and -0.0 for 0.0): how parse_json's two paths are held to each other. */
[[nodiscard]] bool identical_json(const nlohmann::json& a, const nlohmann::json& b);

/**
 * Bytes nlohmann's DOM of `text` holds, roughly: a 16-byte value for each value, a map node
 * (~80 bytes with its key's string) for each object member, and the strings' characters; counted
 * by a pass that builds nothing. Throws as `parse_json` does for malformed text.
 */
[[nodiscard]] std::uint64_t json_dom_bytes(const std::string& text, const std::string& where);

/** More than `json_dom_bytes` makes of one byte of JSON text: the densest text, `{"":0}` in an
 *  array or members `"a":0` of one-byte keys (a key cannot repeat in one object), makes about 16. */
inline constexpr std::uint64_t kMostDomBytesPerTextByte = 20;

/**
 * A view of one value of a parsed document, together with where it sits: the source `where` and
 * the JSON path (`tables[3].dim`). Children share the document, which must outlive every node.
 * All checks throw `Error` with the one-line message described in the file comment.
 */
class JsonNode {
 public:
  /** The root of `document`, read from `where`. */
  JsonNode(const nlohmann::json& document, std::string where);

  [[nodiscard]] const nlohmann::json& value() const { return *value_; }
  [[nodiscard]] const std::string& where() const { return where_; }
  /** The JSON path, "" for the root. */
  [[nodiscard]] const std::string& path() const { return path_; }
  /** `<where>: <json.path>`, the prefix of this node's messages (also for validators). */
  [[nodiscard]] std::string label() const;
  /** Throws `Error` with `<label>: <problem>`. */
  [[noreturn]] void fail(const std::string& problem) const;

  // ---- structure ------------------------------------------------------------------------------

  /** Requires an object. */
  void expect_object() const;
  /** Requires an object whose keys are all in `allowed` ("unknown field (expected ...)"). */
  void only_keys(std::initializer_list<const char*> allowed) const;
  /** Requires an array of at least `min_size` entries. */
  void expect_array(std::size_t min_size = 0) const;

  /** Whether this is an object with member `key`. */
  [[nodiscard]] bool has(const std::string& key) const;
  /** Member `key` of this object; a missing member is an error ("missing required field"). */
  [[nodiscard]] JsonNode at(const std::string& key) const;
  /** Entry `index` of this array (an internal error if out of range: check `size()` first). */
  [[nodiscard]] JsonNode at(std::size_t index) const;
  /** Number of entries of an array or members of an object; 0 for other values. */
  [[nodiscard]] std::size_t size() const;

  // ---- values ---------------------------------------------------------------------------------

  /** An integer in [min, max] ("expected an integer ≥ min, got ..." / "more than the maximum"). */
  [[nodiscard]] std::int64_t as_int(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                    std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  /** Any integer ≥ 0 up to 2^64 - 1. */
  [[nodiscard]] std::uint64_t as_uint64() const;
  /** A finite number (integer or not) ≥ `min`. */
  [[nodiscard]] double as_double(double min = -std::numeric_limits<double>::infinity()) const;
  /** An array of such numbers, each entry's error naming its path (`icdf[3]: expected ...`). */
  [[nodiscard]] std::vector<double> as_doubles(double min = -std::numeric_limits<double>::infinity()) const;
  [[nodiscard]] bool as_bool() const;
  [[nodiscard]] std::string as_string() const;

 private:
  JsonNode(const nlohmann::json& value, std::string where, std::string path)
      : value_(&value), where_(std::move(where)), path_(std::move(path)) {}
  /** The path of member `key` of this node. */
  [[nodiscard]] std::string member_path(const std::string& key) const;
  /** Throws `Error` about member `key` (present or not) of this node. */
  [[noreturn]] void fail_member(const std::string& key, const std::string& problem) const;

  const nlohmann::json* value_;
  std::string where_;
  std::string path_;
};

}  // namespace embshard::detail
