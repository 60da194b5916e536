#pragma once
// Strict, path-aware reading of JSON documents: every error names the file and the JSON path.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "embshard/core/error.h"

namespace embshard::detail {

/** A JSON value together with where it came from ("task.json: tables[3].dim"). */
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string where, std::string path)
      : value_(value), where_(std::move(where)), path_(std::move(path)) {}

  /** Parses `text`; throws Error naming `where` and the position of a syntax error. */
  static nlohmann::json parse(const std::string& text, const std::string& where) {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      EMBSHARD_THROW(where, ": invalid JSON at byte ", e.byte, " (", e.what(), ")");
    }
  }

  [[nodiscard]] const nlohmann::json& value() const { return value_; }
  [[nodiscard]] std::string label() const { return where_ + ": " + (path_.empty() ? "(top)" : path_); }
  [[nodiscard]] bool has(const std::string& key) const { return value_.contains(key); }

  [[nodiscard]] JsonNode at(const std::string& key) const {
    expect_object();
    EMBSHARD_CHECK(value_.contains(key), label(), ": missing field '", key, "'");
    return JsonNode(value_.at(key), where_, path_.empty() ? key : path_ + "." + key);
  }
  [[nodiscard]] JsonNode at(std::size_t i) const {
    return JsonNode(value_.at(i), where_, path_ + "[" + std::to_string(i) + "]");
  }
  [[nodiscard]] std::size_t size() const { return value_.size(); }

  void expect_object() const {
    EMBSHARD_CHECK(value_.is_object(), label(), ": expected an object");
  }
  void expect_array(std::size_t min_size = 0) const {
    EMBSHARD_CHECK(value_.is_array(), label(), ": expected an array");
    EMBSHARD_CHECK(value_.size() >= min_size, label(), ": expected at least ", min_size,
                   " entries");
  }
  /** Rejects keys not in `allowed` (typos must not pass silently). */
  void only_keys(std::initializer_list<const char*> allowed) const {
    expect_object();
    for (const auto& item : value_.items()) {
      bool known = false;
      for (const char* k : allowed) known = known || item.key() == k;
      EMBSHARD_CHECK(known, label(), ": unknown field '", item.key(), "'");
    }
  }

  [[nodiscard]] std::int64_t as_int(std::int64_t min = INT64_MIN) const {
    EMBSHARD_CHECK(value_.is_number_integer(), label(), ": expected an integer");
    const auto v = value_.is_number_unsigned() && value_.get<std::uint64_t>() > INT64_MAX
                       ? INT64_MAX
                       : value_.get<std::int64_t>();
    EMBSHARD_CHECK(v >= min, label(), " = ", v, ": must be at least ", min);
    return v;
  }
  [[nodiscard]] std::uint64_t as_uint() const {
    EMBSHARD_CHECK(value_.is_number_unsigned() || (value_.is_number_integer() && value_.get<std::int64_t>() >= 0),
                   label(), ": expected a non-negative integer");
    return value_.get<std::uint64_t>();
  }
  [[nodiscard]] double as_double(double min = -1e308) const {
    EMBSHARD_CHECK(value_.is_number(), label(), ": expected a number");
    const double v = value_.get<double>();
    EMBSHARD_CHECK(v >= min, label(), " = ", v, ": must be at least ", min);
    return v;
  }
  [[nodiscard]] bool as_bool() const {
    EMBSHARD_CHECK(value_.is_boolean(), label(), ": expected true or false");
    return value_.get<bool>();
  }
  [[nodiscard]] std::string as_string() const {
    EMBSHARD_CHECK(value_.is_string(), label(), ": expected a string");
    return value_.get<std::string>();
  }

 private:
  const nlohmann::json& value_;
  std::string where_;
  std::string path_;
};

}  // namespace embshard::detail
