#include "embshard/core/spec.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "embshard/core/error.h"

namespace embshard {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

void check_name(const std::string& token, const std::string& what, const std::string& text) {
  EMBSHARD_CHECK(!token.empty(), "spec '", text, "': empty ", what);
  for (char c : token) {
    EMBSHARD_CHECK(is_name_char(c), "spec '", text, "': ", what, " '", token, "' may only use a-z, 0-9, '_', '.', '-'");
  }
}

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_float(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::istringstream in(s);
  in.imbue(std::locale::classic());
  double v = 0;
  in >> v;
  if (in.fail() || !in.eof() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no") return false;
  return std::nullopt;
}

/** Validates `raw` for `p` and returns its canonical text. */
std::string canonical_value(const std::string& owner, const ParamSpec& p, const std::string& raw) {
  const std::string where = owner + ": parameter '" + p.name + "'";
  auto check_bounds = [&](double v) {
    EMBSHARD_CHECK(!p.min_value || v >= *p.min_value, where, " = ", raw, " is below its minimum ", *p.min_value);
    EMBSHARD_CHECK(!p.max_value || v <= *p.max_value, where, " = ", raw, " is above its maximum ", *p.max_value);
  };
  switch (p.type) {
    case ParamType::kInt: {
      auto v = parse_int(raw);
      EMBSHARD_CHECK(v.has_value(), where, " expects an integer, got '", raw, "'");
      check_bounds(static_cast<double>(*v));
      return std::to_string(*v);
    }
    case ParamType::kFloat: {
      auto v = parse_float(raw);
      EMBSHARD_CHECK(v.has_value(), where, " expects a number, got '", raw, "'");
      check_bounds(*v);
      return format_float(*v);
    }
    case ParamType::kBool: {
      auto v = parse_bool(raw);
      EMBSHARD_CHECK(v.has_value(), where, " expects true or false, got '", raw, "'");
      return *v ? "true" : "false";
    }
    case ParamType::kString: {
      if (!p.choices.empty()) {
        bool ok = false;
        std::string all;
        for (const auto& c : p.choices) {
          ok = ok || c == raw;
          all += (all.empty() ? "" : "|") + c;
        }
        EMBSHARD_CHECK(ok, where, " must be one of ", all, ", got '", raw, "'");
      }
      return raw;
    }
  }
  EMBSHARD_ASSERT(false);
  return raw;
}

}  // namespace

std::string format_float(double v) {
  // A whole number is written out (150, not the shorter 1.5e+02): presets' bandwidths read as such.
  if (std::trunc(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(17);
  out << v;
  // Prefer the shortest text that reads back to the same double.
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream o;
    o.imbue(std::locale::classic());
    o.precision(p);
    o << v;
    if (parse_float(o.str()) == v) return o.str();
  }
  return out.str();
}

Spec parse_spec(const std::string& text) {
  Spec spec;
  const auto colon = text.find(':');
  spec.name = text.substr(0, colon);
  check_name(spec.name, "name", text);
  if (colon == std::string::npos) return spec;
  const std::string rest = text.substr(colon + 1);
  EMBSHARD_CHECK(!rest.empty(), "spec '", text, "': nothing after ':'");
  std::set<std::string> seen;
  std::istringstream parts(rest);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const auto eq = part.find('=');
    EMBSHARD_CHECK(eq != std::string::npos, "spec '", text, "': '", part, "' is not key=value");
    std::string key = part.substr(0, eq);
    check_name(key, "key", text);
    EMBSHARD_CHECK(seen.insert(key).second, "spec '", text, "': key '", key, "' given twice");
    spec.pairs.emplace_back(std::move(key), part.substr(eq + 1));
  }
  EMBSHARD_CHECK(rest.back() != ',', "spec '", text, "': trailing ','");
  return spec;
}

std::string format_spec(const Spec& spec) {
  std::string out = spec.name;
  const char* sep = ":";
  for (const auto& [key, value] : spec.pairs) {
    out += sep + key + "=" + value;
    sep = ",";
  }
  return out;
}

void set_spec_value(Spec& spec, const std::string& key, const std::string& value) {
  for (auto& pair : spec.pairs) {
    if (pair.first == key) {
      pair.second = value;
      return;
    }
  }
  spec.pairs.emplace_back(key, value);
}

const char* to_string(ParamType type) {
  switch (type) {
    case ParamType::kInt: return "int";
    case ParamType::kFloat: return "float";
    case ParamType::kBool: return "bool";
    case ParamType::kString: return "string";
  }
  return "?";
}

Params bind_params(const std::string& owner, const std::vector<ParamSpec>& declared,
                   const std::vector<std::pair<std::string, std::string>>& pairs) {
  Params params;
  for (const auto& p : declared) {
    params.specs_[p.name] = p;
    params.order_.push_back(p.name);
    params.values_[p.name] = canonical_value(owner, p, p.default_value);
  }
  for (const auto& [key, value] : pairs) {
    auto it = params.specs_.find(key);
    if (it == params.specs_.end()) {
      std::string accepted;
      for (const auto& p : declared) accepted += (accepted.empty() ? "" : ", ") + p.name;
      EMBSHARD_THROW(owner, ": unknown parameter '", key, "'; accepted: ", accepted.empty() ? "(none)" : accepted);
    }
    params.values_[key] = canonical_value(owner, it->second, value);
  }
  return params;
}

std::string canonical_spec(const std::string& name, const Params& params) {
  Spec spec{name, {}};
  for (const auto& key : params.keys()) spec.pairs.emplace_back(key, params.text(key));
  return format_spec(spec);
}

void Params::check_type(const std::string& key, ParamType type) const {
  auto it = specs_.find(key);
  EMBSHARD_ASSERT(it != specs_.end());
  EMBSHARD_ASSERT(it->second.type == type);
}

const std::string& Params::text(const std::string& key) const {
  auto it = values_.find(key);
  EMBSHARD_ASSERT(it != values_.end());
  return it->second;
}

std::int64_t Params::get_int(const std::string& key) const {
  check_type(key, ParamType::kInt);
  return *parse_int(text(key));
}

double Params::get_float(const std::string& key) const {
  check_type(key, ParamType::kFloat);
  return *parse_float(text(key));
}

bool Params::get_bool(const std::string& key) const {
  check_type(key, ParamType::kBool);
  return text(key) == "true";
}

const std::string& Params::get_string(const std::string& key) const {
  check_type(key, ParamType::kString);
  return text(key);
}

}  // namespace embshard
