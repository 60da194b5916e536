#include "embshard/profile/measure.h"

#include <algorithm>
#include <cstdint>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include "embshard/core/error.h"

namespace embshard {

std::string find_error_in_measure_options(const MeasureOptions& options) {
  if (options.warmup < 0) return "warmup must be >= 0";
  if (options.repeats < 1) return "repeats must be >= 1";
  if (!(options.trim >= 0.0 && options.trim < 0.5)) return "trim must lie in [0, 0.5)";
  return "";
}

Timing summarise(std::vector<double> samples_ms, double trim) {
  EMBSHARD_ASSERT(!samples_ms.empty());
  Timing timing;
  timing.samples_ms = samples_ms;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  timing.min_ms = samples_ms.front();
  timing.max_ms = samples_ms.back();
  timing.median_ms = n % 2 == 1 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  const auto drop = static_cast<std::size_t>(trim * static_cast<double>(n));
  const auto first = samples_ms.begin() + static_cast<std::ptrdiff_t>(drop);
  const auto last = samples_ms.end() - static_cast<std::ptrdiff_t>(drop);
  timing.trimmed_mean_ms = std::accumulate(first, last, 0.0) / static_cast<double>(last - first);
  return timing;
}

namespace {

/** Parses sysfs cache sizes such as "32K", "1024K", "36M". */
std::size_t parse_cache_size(const std::string& text) {
  std::size_t value = 0;
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') value = value * 10 + (text[i++] - '0');
  if (i < text.size() && text[i] == 'K') value <<= 10;
  if (i < text.size() && text[i] == 'M') value <<= 20;
  return value;
}

}  // namespace

std::size_t last_level_cache_bytes() {
  namespace fs = std::filesystem;
  std::size_t largest = 0;
  std::error_code ec;
  const fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::ifstream type_file(entry.path() / "type");
    std::string type;
    if (!(type_file >> type) || type == "Instruction") continue;
    std::ifstream size_file(entry.path() / "size");
    std::string size;
    if (size_file >> size) largest = std::max(largest, parse_cache_size(size));
  }
  return largest > 0 ? largest : std::size_t{32} << 20;
}

CacheFlusher::CacheFlusher(std::size_t bytes) : buffer_(std::max<std::size_t>(bytes / sizeof(long), 1), 1) {}

void CacheFlusher::flush() {
  long sum = sink_;
  for (long& word : buffer_) {  // a write makes every line dirty-owned, then the read streams it
    word += 1;
    sum += word;
  }
  sink_ = sum;
}

bool evict_lines(const void* data, std::size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  constexpr std::size_t kLine = 64;
  const auto begin = reinterpret_cast<std::uintptr_t>(data) & ~(kLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(data) + bytes;
  for (std::uintptr_t line = begin; line < end; line += kLine) {
    _mm_clflush(reinterpret_cast<const void*>(line));
  }
  _mm_mfence();
  return true;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

Timing measure_self_timed(const std::function<double()>& timed_op, const MeasureOptions& options,
                          const std::function<void()>& flush) {
  const std::string problem = find_error_in_measure_options(options);
  EMBSHARD_CHECK(problem.empty(), "measure options: " + problem);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(options.repeats));
  for (int i = 0; i < options.warmup + options.repeats; ++i) {
    if (options.flush_cache && flush) flush();
    const double elapsed = timed_op();
    if (i >= options.warmup) samples.push_back(elapsed);
  }
  return summarise(std::move(samples), options.trim);
}

Timing measure(const std::function<void()>& op, const MeasureOptions& options, const std::function<void()>& flush) {
  return measure_self_timed(
      [&op] {
        const double start = now_ms();
        op();
        return now_ms() - start;
      },
      options, flush);
}

}  // namespace embshard
