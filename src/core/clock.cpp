#include "embshard/core/clock.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace embshard {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string readable_ms(double ms) {
  char text[32];
  if (ms < 1.0) {
    std::snprintf(text, sizeof text, "%.3g ms", ms);
  } else if (ms < 1000.0) {
    std::snprintf(text, sizeof text, "%.1f ms", ms);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", ms / 1000.0);
  }
  return text;
}

std::string format_duration(double seconds) {
  char text[32];
  const auto s = static_cast<long>(seconds < 0 ? 0 : seconds);
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

std::string format_progress(std::int64_t done, std::int64_t total, std::int64_t done_at_start, double elapsed_s) {
  const std::int64_t done_here = done - done_at_start;
  const double per_item_s = done_here > 0 ? elapsed_s / static_cast<double>(done_here) : 0.0;
  return "elapsed " + format_duration(elapsed_s) + ", ETA " +
         format_duration(per_item_s * static_cast<double>(total - done));
}

}  // namespace embshard
