#include "embshard/core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace embshard {

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& body) {
  const auto workers = static_cast<std::size_t>(std::clamp<std::size_t>(
      static_cast<std::size_t>(std::max(1, threads)), 1, std::max<std::size_t>(n, 1)));
  std::exception_ptr first_error;
  std::mutex error_mutex;
  std::atomic<bool> failed{false};
  auto run = [&](std::size_t w) {
    for (std::size_t i = w; i < n && !failed.load(); i += workers) {
      try {
        body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
  run(0);
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace embshard
