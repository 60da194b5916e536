#pragma once
/**
 * @file spec.h
 * @brief Spec strings (`name:key=value,...`) and the declared parameters they bind to.
 *
 * Grammar (v1, no nesting):
 *
 *   spec  := name [ ":" pair ( "," pair )* ]
 *   pair  := key "=" value
 *   name, key := [a-z0-9_.-]+        value := any characters except ","
 *
 * A plug-in declares its parameters as `ParamSpec` records (name, type, default, bounds, doc).
 * `bind_params` checks a parsed spec against them: an unknown key fails and lists the accepted
 * keys, a value of the wrong type or out of bounds fails naming the key, and missing keys take
 * their defaults. `canonical_spec` prints every parameter, defaults included, in declaration
 * order, so `parse -> bind -> canonical` round-trips and two equal configurations print equally.
 */
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace embshard {

/** A spec string split into its parts; keys keep their order of appearance. */
struct Spec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> pairs;
};

/** Parses `text`; throws Error naming `text` on a syntax error or a repeated key. */
[[nodiscard]] Spec parse_spec(const std::string& text);

/** The text of `spec` (`name:k=v,...` in its pair order); `parse_spec(format_spec(s))` == s. */
[[nodiscard]] std::string format_spec(const Spec& spec);

/** `spec` with `key` set to `value` (replacing an existing pair, else appended). */
void set_spec_value(Spec& spec, const std::string& key, const std::string& value);

/** Type of a declared parameter. */
enum class ParamType { kInt, kFloat, kBool, kString };
[[nodiscard]] const char* to_string(ParamType type);

/** One declared parameter of a plug-in. */
struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::string default_value;         ///< as text, in the canonical form of its type
  std::optional<double> min_value;   ///< inclusive bound for kInt / kFloat
  std::optional<double> max_value;   ///< inclusive bound for kInt / kFloat
  std::vector<std::string> choices;  ///< allowed values for kString; empty = any
  std::string doc;                   ///< one line: meaning and unit
};

/** Parameter values after binding: every declared parameter has a value. */
class Params {
 public:
  Params() = default;
  [[nodiscard]] std::int64_t get_int(const std::string& key) const;
  [[nodiscard]] double get_float(const std::string& key) const;
  [[nodiscard]] bool get_bool(const std::string& key) const;
  [[nodiscard]] const std::string& get_string(const std::string& key) const;
  /** Canonical text of a value. */
  [[nodiscard]] const std::string& text(const std::string& key) const;
  [[nodiscard]] const std::vector<std::string>& keys() const { return order_; }

 private:
  friend Params bind_params(const std::string&, const std::vector<ParamSpec>&,
                            const std::vector<std::pair<std::string, std::string>>&);
  void check_type(const std::string& key, ParamType type) const;
  std::map<std::string, std::string> values_;
  std::map<std::string, ParamSpec> specs_;
  std::vector<std::string> order_;
};

/**
 * Binds `pairs` to `declared` for the plug-in `owner` (used in messages). Throws Error on an
 * unknown key (listing the accepted ones), a malformed value or a value out of bounds.
 */
[[nodiscard]] Params bind_params(const std::string& owner, const std::vector<ParamSpec>& declared,
                                 const std::vector<std::pair<std::string, std::string>>& pairs);

/** The canonical text of a float parameter: the shortest that reads back as the same double; a
 *  whole number below 10^15 written out in full ("150", not "1.5e+02"). */
[[nodiscard]] std::string format_float(double v);

/** `name:k1=v1,k2=v2,...` with every parameter in declaration order (just `name` if none). */
[[nodiscard]] std::string canonical_spec(const std::string& name, const Params& params);

}  // namespace embshard
