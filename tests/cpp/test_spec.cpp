#include <gtest/gtest.h>

#include "embshard/core/error.h"
#include "embshard/core/registry.h"
#include "embshard/core/spec.h"
#include "test_util.h"

namespace embshard {
namespace {

struct Thing {
  std::string spec;
};

Registry<Thing> make_registry() {
  Registry<Thing> r("thing");
  r.add({"greedy",
         "a test entry",
         {{"balance", ParamType::kString, "size", {}, {}, {"size", "dim", "lookup"}, "cost"},
          {"k", ParamType::kInt, "3", 1, 10, {}, "beam width"},
          {"scale", ParamType::kFloat, "1.5", 1.0, 2.0, {}, "cap"},
          {"strict", ParamType::kBool, "false", {}, {}, {}, "parity"}}},
        [](const Params& p, const Context&) { return std::make_unique<Thing>(Thing{canonical_spec("greedy", p)}); });
  r.add({"random", "no parameters", {}},
        [](const Params& p, const Context&) { return std::make_unique<Thing>(Thing{canonical_spec("random", p)}); });
  return r;
}

using test_util::error_of;

TEST(Spec, ParsesNameAndPairsInOrder) {
  const Spec s = parse_spec("greedy:k=4,balance=dim");
  EXPECT_EQ(s.name, "greedy");
  ASSERT_EQ(s.pairs.size(), 2u);
  EXPECT_EQ(s.pairs[0], (std::pair<std::string, std::string>{"k", "4"}));
  EXPECT_EQ(s.pairs[1], (std::pair<std::string, std::string>{"balance", "dim"}));
  EXPECT_TRUE(parse_spec("random").pairs.empty());
  EXPECT_EQ(parse_spec("neural:weights=/tmp/a-b.json").pairs[0].second, "/tmp/a-b.json");
}

TEST(Spec, FormatIsTheInverseOfParse) {
  for (const char* text : {"random", "greedy:k=4,balance=dim", "neural:weights=/tmp/a-b.json"}) {
    EXPECT_EQ(format_spec(parse_spec(text)), text);
  }
  Spec s = parse_spec("neuroshard:devices=4");
  set_spec_value(s, "devices", "8");
  set_spec_value(s, "max_dim", "64");
  EXPECT_EQ(format_spec(s), "neuroshard:devices=8,max_dim=64");
}

TEST(Spec, RejectsMalformedText) {
  for (const char* bad :
       {"", ":k=1", "Greedy", "greedy:", "greedy:k", "greedy:k=1,", "greedy:k=1,k=2", "greedy:=1", "gr eedy"}) {
    EXPECT_NE(error_of([&] { (void)parse_spec(bad); }), "") << bad;
  }
}

TEST(Registry, CanonicalSpecListsEveryParameterAndRoundTrips) {
  const auto r = make_registry();
  const Context ctx;
  const std::string canonical = r.create("greedy:k=4", ctx)->spec;
  EXPECT_EQ(canonical, "greedy:balance=size,k=4,scale=1.5,strict=false");
  EXPECT_EQ(r.create(canonical, ctx)->spec, canonical);
  EXPECT_EQ(r.canonical("greedy:strict=yes,scale=1.50"), "greedy:balance=size,k=3,scale=1.5,strict=true");
  EXPECT_EQ(r.canonical("random"), "random");
}

TEST(Spec, AFloatIsTheShortestTextThatReadsBackAndWholeNumbersAreWrittenOut) {
  for (const double v : {1.5, 6.25, 6.621, 0.0001, 1.0 / 3.0, 150.0, 370.0, 4096.0, -300.0, 1e20, 1e-20}) {
    const std::string text = format_float(v);
    EXPECT_EQ(std::stod(text), v) << text;
  }
  EXPECT_EQ(format_float(150.0), "150");  // not 1.5e+02
  EXPECT_EQ(format_float(370.0), "370");
  EXPECT_EQ(format_float(-300.0), "-300");
  EXPECT_EQ(format_float(6.25), "6.25");
  EXPECT_EQ(format_float(1e20), "1e+20");
}

TEST(Registry, UnknownNameListsWhatExists) {
  const auto r = make_registry();
  const std::string err = error_of([&] { (void)r.create("greedyy", Context{}); });
  EXPECT_NE(err.find("unknown thing 'greedyy'"), std::string::npos) << err;
  EXPECT_NE(err.find("greedy, random"), std::string::npos) << err;
}

TEST(Registry, UnknownKeyListsAcceptedKeys) {
  const auto r = make_registry();
  const std::string err = error_of([&] { (void)r.create("greedy:beam=3", Context{}); });
  EXPECT_NE(err.find("unknown parameter 'beam'"), std::string::npos) << err;
  EXPECT_NE(err.find("balance, k, scale, strict"), std::string::npos) << err;
  EXPECT_NE(error_of([&] { (void)r.create("random:k=1", Context{}); }).find("(none)"), std::string::npos);
}

TEST(Registry, TypesBoundsAndChoicesAreEnforced) {
  const auto r = make_registry();
  EXPECT_NE(error_of([&] { (void)r.canonical("greedy:k=0"); }).find("below its minimum"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.canonical("greedy:k=11"); }).find("above its maximum"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.canonical("greedy:k=2.5"); }).find("expects an integer"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.canonical("greedy:scale=abc"); }).find("expects a number"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.canonical("greedy:strict=maybe"); }).find("true or false"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.canonical("greedy:balance=rows"); }).find("size|dim|lookup"), std::string::npos);
}

TEST(Params, TypedAccess) {
  const auto r = make_registry();
  const Params p = r.bind(parse_spec("greedy:k=7,scale=1.25,strict=true,balance=lookup"));
  EXPECT_EQ(p.get_int("k"), 7);
  EXPECT_DOUBLE_EQ(p.get_float("scale"), 1.25);
  EXPECT_TRUE(p.get_bool("strict"));
  EXPECT_EQ(p.get_string("balance"), "lookup");
  EXPECT_THROW((void)p.get_int("balance"), InternalError);
}

}  // namespace
}  // namespace embshard
