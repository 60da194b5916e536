#include "args.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/cost_sample.h"

namespace embshard::cli {

Args::Args(const VerbDoc& verb, const std::vector<std::string>& words)
    : doc_(verb), verb_(verb.name.empty() ? "(main)" : verb.name) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0) {
      positional_.push_back(w);
      continue;
    }
    std::string key = w.substr(2);
    const auto eq = key.find('=');
    const std::string name = eq == std::string::npos ? key : key.substr(0, eq);
    const OptionDoc* option = lookup(name);
    if (option == nullptr) {
      std::string known;
      for (const auto* list : {&doc_.options, &common_options()})
        for (const OptionDoc& o : *list) known += (known.empty() ? "--" : ", --") + o.name;
      EMBSHARD_THROW("embshard ", verb_, ": unknown option --", name, "; accepted: ", known, " (embshard ", doc_.name,
                     doc_.name.empty() ? "" : " ", "--help explains them)");
    }
    if (eq != std::string::npos) {
      EMBSHARD_CHECK(!option->value.empty(), "embshard ", verb_, ": option --", name, " takes no value");
      values_[name] = key.substr(eq + 1);
    } else if (option->value.empty()) {
      flags_given_.insert(name);
    } else {
      // A following option is never taken as the value (`--out --quiet`); `-` (stdout) and
      // negative numbers (`--x -1`) are values. `--key=--v` passes such a value on purpose.
      EMBSHARD_CHECK(i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0, "embshard ", verb_, ": option --", name,
                     " needs a value");
      values_[name] = words[++i];
    }
  }
  for (const auto& [key, value] : values_) {
    EMBSHARD_CHECK(!value.empty(), "embshard ", verb_, ": option --", key, " needs a value, got an empty one");
  }
}

const OptionDoc* Args::lookup(const std::string& key) const {
  for (const auto* list : {&doc_.options, &common_options()})
    for (const OptionDoc& o : *list)
      if (o.name == key) return &o;
  return nullptr;
}

const OptionDoc& Args::declared(const std::string& key) const {
  if (const OptionDoc* option = lookup(key)) return *option;
  throw InternalError("embshard " + verb_ + ": reads option --" + key + ", which apps/cli/verbs.cpp does not declare");
}

void Args::check_no_declared_default(const std::string& key) const {
  const std::string& text = declared(key).fallback;
  if (!text.empty())
    throw InternalError("embshard " + verb_ + ": --" + key + " declares its default (" + text +
                        ") in apps/cli/verbs.cpp; the code reads it from there, never with a fallback of its own");
}

const std::string& Args::declared_default(const std::string& key) const {
  const std::string& text = declared(key).fallback;
  if (text.empty())
    throw InternalError("embshard " + verb_ + ": --" + key + " has no default in apps/cli/verbs.cpp to read");
  return text;
}

std::optional<std::string> Args::get(const std::string& key) {
  (void)declared(key);
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

std::string Args::value(const std::string& key) { return get(key).value_or(declared_default(key)); }

std::int64_t Args::get_int(const std::string& key) { return parse_int(key, value(key)); }

double Args::get_double(const std::string& key) { return parse_double(key, value(key)); }

std::string Args::get_or(const std::string& key, const std::string& fallback) {
  check_no_declared_default(key);
  return get(key).value_or(fallback);
}

std::int64_t Args::get_int(const std::string& key, std::int64_t fallback) {
  check_no_declared_default(key);
  const auto v = get(key);
  return v ? parse_int(key, *v) : fallback;
}

double Args::get_double(const std::string& key, double fallback) {
  check_no_declared_default(key);
  const auto v = get(key);
  return v ? parse_double(key, *v) : fallback;
}

std::int64_t Args::parse_int(const std::string& key, const std::string& text) const {
  std::int64_t out = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  EMBSHARD_CHECK(ec == std::errc() && ptr == text.data() + text.size(), "embshard ", verb_, ": --", key,
                 " expects an integer, got '", text, "'");
  return out;
}

double Args::parse_double(const std::string& key, const std::string& text) const {
  double out = 0.0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  EMBSHARD_CHECK(ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out), "embshard ", verb_,
                 ": --", key, " expects a number, got '", text, "'");
  return out;
}

bool Args::given(const std::string& key) const { return values_.count(key) > 0 || flags_given_.count(key) > 0; }

std::vector<std::string> Args::given_options() const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : values_) keys.push_back(key);
  keys.insert(keys.end(), flags_given_.begin(), flags_given_.end());
  return keys;
}

bool Args::flag(const std::string& key) {
  (void)declared(key);
  asked_.insert(key);
  return flags_given_.count(key) > 0;
}

void Args::finish(std::size_t consumed_positionals) const {
  // Declared, but not an option of what was asked for (`pool --check --out F`).
  for (const std::string& key : given_options()) {
    if (!asked_.count(key)) {
      std::string used;
      for (const auto& k : asked_) used += (used.empty() ? "--" : ", --") + k;
      EMBSHARD_THROW("embshard ", verb_, ": option --", key, " does not apply here (this use takes ", used, ")");
    }
  }
  EMBSHARD_CHECK(positional_.size() <= consumed_positionals, "embshard ", verb_, ": unexpected argument '",
                 positional_.size() > consumed_positionals ? positional_[consumed_positionals] : "", "'");
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(separator, begin), text.size());
    if (end > begin) items.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

void apply_common_options(Args& args, Context& ctx) {
  ctx.num_threads = static_cast<int>(args.get_int("threads", std::max(1, this_machine("cpu", 1).logical_cpus)));
  EMBSHARD_CHECK(ctx.num_threads >= 1, "--threads must be at least 1");
  kernels::set_cpu_kernel_threads(ctx.num_threads);
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
