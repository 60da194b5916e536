#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
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

TEST(ParallelFor, RethrowsTheLowestFailingIndexOnTheCaller) {
  for (int threads : {1, 2, 4}) {
    try {
      parallel_for(200, threads, [](std::size_t i) {
        if (i == 17 || i == 18 || i > 150) throw std::runtime_error(std::to_string(i));
      });
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "17") << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace embshard
