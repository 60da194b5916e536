#pragma once
/**
 * @file context.h
 * @brief `Context`: what every component may know about the run it is part of.
 *
 * There are no process globals in embshard: the number of threads, the seed of every randomised
 * step, the device, the deadline and the log all travel in a `Context` passed by const reference.
 * A plan records the context's seed in its provenance, so re-running with the same context and
 * inputs reproduces it.
 */
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace embshard {

/** Severity of a log line. `kQuiet` as a verbosity silences everything. */
enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kQuiet = 3 };

/** Receives log lines; the default sink writes `[level] message` to stderr. */
using LogSink = std::function<void(LogLevel, const std::string&)>;

struct Context {
  int num_threads = 1;                   ///< worker threads a component may use (>= 1)
  std::uint64_t seed = 0;                ///< root seed; derive sub-streams with `derive_seed`
  std::string device = "cpu";            ///< "cpu" or "cuda:N"
  LogLevel verbosity = LogLevel::kInfo;  ///< lines below this level are dropped
  LogSink sink;                          ///< empty means stderr
  /// The live status line of long work (core/progress.h): each call replaces the line shown, ""
  /// clears it. Empty (the default, and for logs that are not a terminal): no live line at all.
  std::function<void(const std::string&)> progress;
  /// Wall-clock deadline for long operations; empty means none.
  std::optional<std::chrono::steady_clock::time_point> deadline;

  /** Logs `message` at `level` if it passes the verbosity filter. */
  void log(LogLevel level, const std::string& message) const;
  void info(const std::string& message) const { log(LogLevel::kInfo, message); }
  void warn(const std::string& message) const { log(LogLevel::kWarning, message); }
  void debug(const std::string& message) const { log(LogLevel::kDebug, message); }

  /** True once the deadline (if any) has passed. */
  [[nodiscard]] bool past_deadline() const;
};

/**
 * A seed for an independent random stream identified by `stream` (e.g. a table id), derived
 * from the root `seed` with SplitMix64 so that neighbouring streams are uncorrelated.
 */
[[nodiscard]] std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace embshard
