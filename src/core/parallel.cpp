#include "embshard/core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace embshard {

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& body) {
  const std::size_t workers =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::max(1, threads)), 1, std::max<std::size_t>(n, 1));
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> stop_at{n};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&] {
    for (;;) {
      const std::size_t i = next++;
      if (i >= stop_at.load()) return;
      try {
        body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (i < stop_at.load()) {
          error = std::current_exception();
          stop_at = i;
        }
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace embshard
