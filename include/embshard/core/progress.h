#pragma once
/**
 * @file progress.h
 * @brief Progress of long work (compare, measured evaluation, statistics of big files, pool
 *        batches, profiling, training): a live line with the count, the percentage and an ETA
 *        where a person watches a terminal, one final line otherwise.
 *
 * The live line goes to `Context::progress`, which the CLI sets only when stderr is a terminal and
 * `--quiet` is not given; it is redrawn at most every 0.25 s and cleared when the work ends. The
 * final line ("compare: 300 plans in 0:00:41") goes to the context's log at info level, so
 * `--quiet` and non-terminal logs get exactly that one line (or nothing under `--quiet`).
 * `advance` may be called from several threads.
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "embshard/core/context.h"

namespace embshard {

class Progress {
 public:
  /** `what` names the work and its unit ("compare: plans"); `done_at_start`: a resumed run's. */
  Progress(const Context& ctx, std::string what, std::int64_t total, std::int64_t done_at_start = 0);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /** Clears the live line (an unfinished run, e.g. on an error, leaves no final line). */
  ~Progress();

  /** `n` more items done; redraws the live line when it is due. */
  void advance(std::int64_t n = 1);
  /** Clears the live line and logs the final line, with `detail` appended when given. */
  void finish(const std::string& detail = "");

  /** The live line as it reads now: "what 12/300 (4%), elapsed 0:00:03, ETA 0:01:12". */
  [[nodiscard]] std::string line() const;

 private:
  const Context& ctx_;
  std::string what_;
  std::int64_t total_;
  std::int64_t done_at_start_;
  std::atomic<std::int64_t> done_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex draw_mutex_;
  bool finished_ = false;
};

}  // namespace embshard
