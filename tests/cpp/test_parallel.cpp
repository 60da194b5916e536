#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "embshard/core/parallel.h"

namespace embshard {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnce) {
  for (int threads : {1, 2, 5}) {
    std::vector<std::atomic<int>> hits(103);
    parallel_for(hits.size(), threads, [&](std::size_t i) { hits[i]++; });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
  parallel_for(0, 4, [](std::size_t) { FAIL(); });
}

TEST(ParallelFor, RethrowsTheFirstExceptionOnTheCaller) {
  EXPECT_THROW(parallel_for(50, 2,
                            [](std::size_t i) {
                              if (i == 17) throw std::runtime_error("boom");
                            }),
               std::runtime_error);
}

}  // namespace
}  // namespace embshard
