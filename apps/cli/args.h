#pragma once
// A small strict option parser for the CLI verbs: `--key value`, `--key=value` and `--flag`.
// A verb's options are declared once (verbs.h): an undeclared option is an error that lists the
// verb's options; a declared one the verb's path does not use is an error too; an empty value
// (`--out ''`) is an error naming the option, never taken as "not given". A default is written
// once, in the declaration: `value`, `get_int` and `get_double` with no fallback read it. The
// forms with a fallback are for a default the code computes (declared ""). Reading an undeclared
// option, or giving a fallback for one whose default is declared, is a bug (InternalError).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "verbs.h"

namespace embshard::cli {

/** The non-empty items of a `separator`-separated list ("a;b;;c" -> a, b, c): sharders, plan files. */
[[nodiscard]] std::vector<std::string> split_list(const std::string& text, char separator = ';');

class Args {
 public:
  /** `words` are the arguments after the verb (sub-verbs stay as positionals). */
  Args(const VerbDoc& verb, const std::vector<std::string>& words);

  [[nodiscard]] std::optional<std::string> get(const std::string& key);
  [[nodiscard]] std::string require(const std::string& key);
  /** The value given, else the declared default (verbs.cpp: the one place of a default). */
  [[nodiscard]] std::string value(const std::string& key);
  /** An integer: the value given, else the declared default; Error naming the option otherwise. */
  [[nodiscard]] std::int64_t get_int(const std::string& key);
  /** A finite number (`1e-3`, `0.5`): given, else declared; Error naming the option otherwise. */
  [[nodiscard]] double get_double(const std::string& key);
  /** The same for an option whose default the code computes (declared ""): `fallback` when not given. */
  [[nodiscard]] std::string get_or(const std::string& key, const std::string& fallback);
  [[nodiscard]] std::int64_t get_int(const std::string& key, std::int64_t fallback);
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
  /** The declared option `key` (the verb's own or a common one), or nullptr. */
  const OptionDoc* lookup(const std::string& key) const;
  /** `lookup(key)`; InternalError if undeclared. */
  const OptionDoc& declared(const std::string& key) const;
  /** InternalError if `key` declares a default: the code must not write it a second time. */
  void check_no_declared_default(const std::string& key) const;
  /** The declared default of `key`; InternalError if it has none. */
  const std::string& declared_default(const std::string& key) const;
  [[nodiscard]] std::int64_t parse_int(const std::string& key, const std::string& text) const;
  [[nodiscard]] double parse_double(const std::string& key, const std::string& text) const;

  const VerbDoc& doc_;
  std::string verb_;
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_given_;
  std::set<std::string> asked_;
  std::vector<std::string> positional_;
};

/**
 * Applies the options every verb of both binaries takes (verbs.h `common_options`) to `ctx` and
 * the kernels: `--threads` (default one per logical CPU of the fingerprint, which
 * EMBSHARD_FAKE_FINGERPRINT can set), `--quiet` (warnings and errors only), `--verbose` (also the
 * per-epoch / per-iteration detail of training), and, when stderr is a terminal and not
 * `--quiet`, the live progress line of long work (core/progress.h).
 */
void apply_common_options(Args& args, Context& ctx);

}  // namespace embshard::cli
