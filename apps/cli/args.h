#pragma once
// A small strict option parser for the CLI verbs: `--key value`, `--key=value` and `--flag`.
// Unknown or unused options are errors that list what the verb accepts; an empty value
// (`--out ''`) is an error naming the option, never taken as "not given".
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/core/error.h"

namespace embshard::cli {

/** The non-empty items of a ';'-separated list ("a;b;;c" -> a, b, c): sharders, plan files. */
[[nodiscard]] std::vector<std::string> split_list(const std::string& text);

class Args {
 public:
  /** `words` are the arguments after the verb; `flags` are the options that take no value. */
  Args(std::string verb, const std::vector<std::string>& words, std::set<std::string> flags = {});

  [[nodiscard]] std::optional<std::string> get(const std::string& key);
  [[nodiscard]] std::string require(const std::string& key);
  [[nodiscard]] std::string get_or(const std::string& key, const std::string& fallback);
  [[nodiscard]] std::int64_t get_int(const std::string& key, std::int64_t fallback);
  /** A finite number (`1e-3`, `0.5`); Error naming the option and the value otherwise. */
  [[nodiscard]] double get_double(const std::string& key, double fallback);
  [[nodiscard]] bool flag(const std::string& key);
  /** Whether `--key` was given (a value or a flag); does not count as asking for it. */
  [[nodiscard]] bool given(const std::string& key) const;
  /** Every option given (values and flags), without the dashes. */
  [[nodiscard]] std::vector<std::string> given_options() const;
  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  /** Throws if an option was given that the verb never asked for. */
  void finish(std::size_t consumed_positionals = 0) const;

 private:
  std::string verb_;
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_given_;
  std::set<std::string> asked_;
  std::vector<std::string> positional_;
};

/**
 * Applies the log options every verb takes to `ctx`: `--quiet` (warnings and errors only),
 * `--verbose` (also the per-epoch / per-iteration detail of training), and, when stderr is a
 * terminal and not `--quiet`, the live progress line of long work (core/progress.h).
 */
void apply_log_options(Args& args, Context& ctx);

}  // namespace embshard::cli
