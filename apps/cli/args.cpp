#include "args.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

namespace embshard::cli {

Args::Args(std::string verb, const std::vector<std::string>& words, std::set<std::string> flags)
    : verb_(std::move(verb)) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0) {
      positional_.push_back(w);
      continue;
    }
    std::string key = w.substr(2);
    const auto eq = key.find('=');
    if (eq != std::string::npos) {
      values_[key.substr(0, eq)] = key.substr(eq + 1);
    } else if (flags.count(key)) {
      flags_given_.insert(key);
    } else {
      // A following option is never taken as the value (`--out --quiet`); `-` (stdout) and
      // negative numbers (`--x -1`) are values. `--key=--v` passes such a value on purpose.
      EMBSHARD_CHECK(i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0, "embshard ", verb_,
                     ": option --", key, " needs a value");
      values_[key] = words[++i];
    }
  }
  for (const auto& [key, value] : values_) {
    EMBSHARD_CHECK(!value.empty(), "embshard ", verb_, ": option --", key, " needs a value, got an empty one");
  }
}

std::optional<std::string> Args::get(const std::string& key) {
  asked_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::require(const std::string& key) {
  auto v = get(key);
  EMBSHARD_CHECK(v.has_value(), "embshard ", verb_, ": missing --", key);
  return *v;
}

std::string Args::get_or(const std::string& key, const std::string& fallback) {
  return get(key).value_or(fallback);
}

std::int64_t Args::get_int(const std::string& key, std::int64_t fallback) {
  auto v = get(key);
  if (!v) return fallback;
  std::int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  EMBSHARD_CHECK(ec == std::errc() && ptr == v->data() + v->size(), "embshard ", verb_, ": --",
                 key, " expects an integer, got '", *v, "'");
  return out;
}

double Args::get_double(const std::string& key, double fallback) {
  auto v = get(key);
  if (!v) return fallback;
  double out = 0.0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  EMBSHARD_CHECK(ec == std::errc() && ptr == v->data() + v->size() && std::isfinite(out), "embshard ", verb_,
                 ": --", key, " expects a number, got '", *v, "'");
  return out;
}

bool Args::given(const std::string& key) const {
  return values_.count(key) > 0 || flags_given_.count(key) > 0;
}

std::vector<std::string> Args::given_options() const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : values_) keys.push_back(key);
  keys.insert(keys.end(), flags_given_.begin(), flags_given_.end());
  return keys;
}

bool Args::flag(const std::string& key) {
  asked_.insert(key);
  return flags_given_.count(key) > 0;
}

void Args::finish(std::size_t consumed_positionals) const {
  for (const auto& [key, value] : values_) {
    if (!asked_.count(key)) {
      std::string known;
      for (const auto& k : asked_) known += (known.empty() ? "--" : ", --") + k;
      EMBSHARD_THROW("embshard ", verb_, ": unknown option --", key, "; accepted: ", known);
    }
  }
  for (const auto& key : flags_given_) EMBSHARD_CHECK(asked_.count(key), "embshard ", verb_, ": unknown option --", key);
  EMBSHARD_CHECK(positional_.size() <= consumed_positionals, "embshard ", verb_,
                 ": unexpected argument '",
                 positional_.size() > consumed_positionals ? positional_[consumed_positionals] : "",
                 "'");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(';', begin), text.size());
    if (end > begin) items.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

void apply_log_options(Args& args, Context& ctx) {
  const bool quiet = args.flag("quiet");
  const bool verbose = args.flag("verbose");
  EMBSHARD_CHECK(!(quiet && verbose), "--quiet and --verbose: give one of them");
  if (quiet) ctx.verbosity = LogLevel::kWarning;
  if (verbose) ctx.verbosity = LogLevel::kDebug;
  if (!quiet && isatty(STDERR_FILENO) == 1) {
    ctx.progress = [](const std::string& line) {  // one live line, redrawn in place
      std::cerr << "\r\033[K" << line << std::flush;
    };
  }
}

}  // namespace embshard::cli
