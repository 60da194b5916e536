// Progress: the live line goes to Context::progress only when set, is cleared at the end, and the
// final line goes to the log once, even when several threads advance it.
#include "embshard/core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "embshard/core/parallel.h"

namespace embshard {
namespace {

struct Captured {
  std::vector<std::string> live;
  std::vector<std::string> log;
};

Context capturing_context(Captured& out, bool live_line) {
  Context ctx;
  ctx.sink = [&out](LogLevel, const std::string& line) { out.log.push_back(line); };
  if (live_line) ctx.progress = [&out](const std::string& line) { out.live.push_back(line); };
  return ctx;
}

TEST(Progress, WithoutALiveLineOnlyTheFinalLineIsLogged) {
  Captured out;
  const Context ctx = capturing_context(out, /*live_line=*/false);
  Progress p(ctx, "compare: plans", 3);
  for (int i = 0; i < 3; ++i) p.advance();
  EXPECT_TRUE(out.log.empty());
  p.finish("2 tasks");
  ASSERT_EQ(out.log.size(), 1U);
  EXPECT_EQ(out.log[0].rfind("compare: plans: 3 done in ", 0), 0U) << out.log[0];
  EXPECT_NE(out.log[0].find(", 2 tasks"), std::string::npos) << out.log[0];
}

TEST(Progress, LiveLineShowsCountAndPercentAndIsClearedAtTheEnd) {
  Captured out;
  const Context ctx = capturing_context(out, /*live_line=*/true);
  {
    Progress p(ctx, "stats: tables", 4);
    p.advance();  // the first advance is always drawn
    ASSERT_FALSE(out.live.empty());
    EXPECT_EQ(out.live.back().rfind("stats: tables 1/4 (25%)", 0), 0U) << out.live.back();
    p.advance(3);  // the last item is always drawn
    EXPECT_EQ(out.live.back().rfind("stats: tables 4/4 (100%)", 0), 0U) << out.live.back();
    p.finish();
    EXPECT_EQ(out.live.back(), "");
  }
  EXPECT_EQ(out.log.size(), 1U);
}

TEST(Progress, AnUnfinishedRunClearsItsLineAndLogsNothing) {
  Captured out;
  const Context ctx = capturing_context(out, /*live_line=*/true);
  { Progress(ctx, "pool: batches", 10).advance(); }
  ASSERT_FALSE(out.live.empty());
  EXPECT_EQ(out.live.back(), "");
  EXPECT_TRUE(out.log.empty());
}

TEST(Progress, ResumedWorkCountsOnlyWhatThisRunDid) {
  Captured out;
  const Context ctx = capturing_context(out, /*live_line=*/true);
  Progress p(ctx, "profile: samples", 10, /*done_at_start=*/6);
  p.advance();
  EXPECT_EQ(out.live.back().rfind("profile: samples 7/10 (70%)", 0), 0U) << out.live.back();
  p.finish();
  EXPECT_EQ(out.log.back().rfind("profile: samples: 1 done in ", 0), 0U) << out.log.back();
}

TEST(Progress, AdvancesFromManyThreadsAreAllCounted) {
  Captured out;
  const Context ctx = capturing_context(out, /*live_line=*/false);
  Progress p(ctx, "work", 1000);
  parallel_for(1000, 4, [&](std::size_t) { p.advance(); });
  EXPECT_EQ(p.line().rfind("work 1000/1000 (100%)", 0), 0U) << p.line();
}

}  // namespace
}  // namespace embshard
