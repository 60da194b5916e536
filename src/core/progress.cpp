#include "embshard/core/progress.h"

#include <cstdio>

#include "embshard/core/clock.h"

namespace embshard {
namespace {

constexpr std::chrono::milliseconds kRedrawEvery{250};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Progress::Progress(const Context& ctx, std::string what, std::int64_t total, std::int64_t done_at_start)
    : ctx_(ctx), what_(std::move(what)), total_(total), done_at_start_(done_at_start), done_(done_at_start),
      start_(std::chrono::steady_clock::now()), last_draw_(start_ - kRedrawEvery) {}

Progress::~Progress() {
  if (!finished_ && ctx_.progress) ctx_.progress("");
}

std::string Progress::line() const {
  const std::int64_t done = done_.load();
  char percent[16];
  std::snprintf(percent, sizeof percent, "%.0f%%",
                total_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0);
  return what_ + " " + std::to_string(done) + "/" + std::to_string(total_) + " (" + percent + "), " +
         format_progress(done, total_, done_at_start_, seconds_since(start_));
}

void Progress::advance(std::int64_t n) {
  done_ += n;
  if (!ctx_.progress) return;
  const std::lock_guard<std::mutex> lock(draw_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < kRedrawEvery && done_.load() < total_) return;
  last_draw_ = now;
  ctx_.progress(line());
}

void Progress::finish(const std::string& detail) {
  if (finished_) return;
  finished_ = true;
  if (ctx_.progress) ctx_.progress("");
  const std::int64_t done = done_.load();
  ctx_.info(what_ + ": " + std::to_string(done - done_at_start_) + " done in " +
            format_duration(seconds_since(start_)) + (detail.empty() ? "" : ", " + detail));
}

}  // namespace embshard
