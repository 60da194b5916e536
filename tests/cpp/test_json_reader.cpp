// The strict JSON reader shared by the stats, pool, task and plan readers (src/core/json_reader.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "embshard/core/error.h"
#include "test_util.h"

namespace embshard::detail {
namespace {

using test_util::error_or_none;

/** The message of reading `text` with `read`, which gets the root of the parsed document. */
std::string read_error(const std::string& text, const std::function<void(const JsonNode&)>& read) {
  return error_or_none([&] {
    const nlohmann::json doc = parse_json(text, "x.json");
    read(JsonNode(doc, "x.json"));
  });
}

TEST(JsonReader, ReadsValuesAtTheirPaths) {
  const nlohmann::json doc = parse_json(R"({"a": {"b": [1, -2, 2.5, true, "s"]}})", "x.json");
  const JsonNode root(doc, "x.json");
  const JsonNode b = root.at("a").at("b");
  EXPECT_EQ(root.label(), "x.json: top level");
  EXPECT_EQ(b.label(), "x.json: a.b");
  EXPECT_EQ(b.at(std::size_t{2}).label(), "x.json: a.b[2]");
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(b.at(std::size_t{0}).as_int(0, 1), 1);
  EXPECT_EQ(b.at(std::size_t{1}).as_int(), -2);
  EXPECT_EQ(b.at(std::size_t{2}).as_double(0), 2.5);
  EXPECT_TRUE(b.at(std::size_t{3}).as_bool());
  // What it builds is what nlohmann's own parser builds.
  for (const char* text :
       {"[1, -2, 2.5]", R"({"a": {"b": [1, [], {}, [[-0.0]], "é\u00e9"], "c": null}, "d": true})",
        "18446744073709551615", "-9223372036854775808", R"([{"x": [1e300, 5e-324]}, false, ""])", "{}", "[]", R"("s")"})
    EXPECT_EQ(parse_json(text, "x.json"), nlohmann::json::parse(text)) << text;
  const nlohmann::json numbers = parse_json("[1, -2, 2.5]", "x.json");
  EXPECT_EQ(JsonNode(numbers, "x.json").as_doubles(), (std::vector<double>{1.0, -2.0, 2.5}));
  EXPECT_EQ(b.at(std::size_t{4}).as_string(), "s");
  EXPECT_TRUE(root.has("a"));
  EXPECT_FALSE(root.has("b"));
  EXPECT_FALSE(b.has("a"));
}

TEST(JsonReader, NamesWhereAndPathInEveryError) {
  const auto first = [](const JsonNode& r) { return r.at("t").at(std::size_t{0}); };
  EXPECT_EQ(read_error(R"({"t": [{"dim": -8}]})", [&](const JsonNode& r) { (void)first(r).at("dim").as_int(1); }),
            "x.json: t[0].dim: expected an integer ≥ 1, got -8");
  EXPECT_EQ(read_error(R"({"t": [{}]})", [&](const JsonNode& r) { (void)first(r).at("dim"); }),
            "x.json: t[0].dim: missing required field");
  EXPECT_EQ(read_error(R"({"t": [{"dimm": 3}]})",
                       [&](const JsonNode& r) {
                         first(r).only_keys({"dim", "name"});
                       }),
            "x.json: t[0].dimm: unknown field (expected dim, name)");
  EXPECT_EQ(read_error("[]", [](const JsonNode& r) { r.expect_object(); }),
            "x.json: top level: expected an object, got an array");
  EXPECT_EQ(read_error(R"({"t": 1})", [](const JsonNode& r) { r.at("t").expect_array(); }),
            "x.json: t: expected an array, got 1");
  EXPECT_EQ(read_error(R"({"t": []})", [](const JsonNode& r) { r.at("t").expect_array(1); }),
            "x.json: t: expected at least 1 entries, got 0");
  EXPECT_EQ(read_error(R"({"s": null})", [](const JsonNode& r) { (void)r.at("s").as_string(); }),
            "x.json: s: expected a string, got null");
  EXPECT_EQ(read_error(R"({"b": 1})", [](const JsonNode& r) { (void)r.at("b").as_bool(); }),
            "x.json: b: expected true or false, got 1");
  EXPECT_EQ(read_error(R"({"x": "1"})", [](const JsonNode& r) { (void)r.at("x").as_double(); }),
            "x.json: x: expected a number, got a string");
  EXPECT_EQ(read_error(R"({"x": -0.5})", [](const JsonNode& r) { (void)r.at("x").as_double(0); }),
            "x.json: x: expected a number ≥ 0, got -0.5");
  EXPECT_EQ(read_error(R"({"t": 1})", [](const JsonNode& r) { r.at("t").fail("is odd"); }), "x.json: t: is odd");
  EXPECT_EQ(read_error(R"({"v": [0.5, 1, "2"]})", [](const JsonNode& r) { (void)r.at("v").as_doubles(); }),
            "x.json: v[2]: expected a number, got a string");
  EXPECT_EQ(read_error(R"({"v": [0.5, -1]})", [](const JsonNode& r) { (void)r.at("v").as_doubles(0); }),
            "x.json: v[1]: expected a number ≥ 0, got -1");
  EXPECT_EQ(read_error(R"({"v": {}})", [](const JsonNode& r) { (void)r.at("v").as_doubles(); }),
            "x.json: v: expected an array, got an object");
}

TEST(JsonReader, RejectsIntegersOutOfRange) {
  const auto int_error = [](const std::string& number, std::int64_t min, std::int64_t max) {
    return read_error("{\"n\": " + number + "}", [&](const JsonNode& r) { (void)r.at("n").as_int(min, max); });
  };
  EXPECT_EQ(int_error("2.0", 0, 10), "x.json: n: expected an integer ≥ 0, got 2.0");
  EXPECT_EQ(int_error("11", 0, 10), "x.json: n: got 11, more than the maximum 10");
  EXPECT_EQ(int_error("18446744073709551615", 0, INT64_MAX),
            "x.json: n: got 18446744073709551615, more than the maximum 9223372036854775807");
  EXPECT_EQ(int_error("3", INT64_MIN, -1), "x.json: n: got 3, more than the maximum -1");
  EXPECT_EQ(int_error("-3", INT64_MIN, INT64_MAX), "(no error)");
  EXPECT_EQ(read_error(R"({"n": -1})", [](const JsonNode& r) { (void)r.at("n").as_uint64(); }),
            "x.json: n: expected an integer ≥ 0, got -1");
  const nlohmann::json doc = parse_json(R"({"n": 18446744073709551615})", "x.json");
  EXPECT_EQ(JsonNode(doc, "x.json").at("n").as_uint64(), UINT64_MAX);
}

TEST(JsonReader, RejectsMalformedJsonWithItsPosition) {
  const auto parse_error = [](const std::string& text) {
    return error_or_none([&] { (void)parse_json(text, "x.json"); });
  };
  EXPECT_NE(parse_error("{\"a\": 1,\n \"b\" x}").find("x.json: malformed JSON: parse error at line 2, column"),
            std::string::npos);
  EXPECT_NE(parse_error("").find("x.json: malformed JSON"), std::string::npos);
  const std::string overflow = parse_error("{\"a\": 1" + std::string(400, '0') + "}");
  EXPECT_NE(overflow.find("x.json: malformed JSON: number overflow"), std::string::npos) << overflow;
  EXPECT_NE(overflow.find("..."), std::string::npos) << overflow;
  EXPECT_LT(overflow.size(), 300u);
  EXPECT_NE(parse_error("[\"a\xff\"]").find("\\xff"), std::string::npos);
}

TEST(JsonReader, RejectsDuplicateKeysNamingTheirPath) {
  const auto parse_error = [](const std::string& text) {
    return error_or_none([&] { (void)parse_json(text, "x.json"); });
  };
  EXPECT_EQ(parse_error(R"({"a": 1, "a": 1})"), "x.json: a: duplicate key (an object names it twice)");
  EXPECT_EQ(parse_error(R"({"t": [{"a": 1}, [], {"b": {}, "c": 2, "c": 3}]})"),
            "x.json: t[2].c: duplicate key (an object names it twice)");
  EXPECT_EQ(parse_error(R"([{"a": 1}, {"a": 1}])"), "(no error)");
}

TEST(JsonReader, NoDocumentsDomOutgrowsItsTextByMoreThanTheBoundItIsBuiltUnder) {
  // parse_json builds without counting first where text × kMostDomBytesPerTextByte fits in
  // memory: documents of the densest kinds (many short keys, scalars, empty containers, nesting).
  const auto repeated = [](const std::string& open, const std::string& item, const std::string& close, int count,
                           bool numbered) {
    std::string text = open;
    for (int i = 0; i < count; ++i) text += (i ? "," : "") + (numbered ? "\"" + std::to_string(i) + "\":" : "") + item;
    return text + close;
  };
  std::vector<std::string> documents = {repeated("{", "0", "}", 20000, true),
                                        repeated("{", "[]", "}", 20000, true),
                                        repeated("{", "{}", "}", 20000, true),
                                        repeated("[", "0", "]", 20000, false),
                                        repeated("[", "[]", "]", 20000, false),
                                        repeated("[", "{}", "]", 20000, false),
                                        repeated("[", "\"\"", "]", 20000, false),
                                        repeated("[", "null", "]", 20000, false),
                                        std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'),
                                        repeated("{", R"({"a":{"b":0}})", "}", 5000, true),
                                        "0",
                                        "{}"};
  // The densest: `{"":0}` in an array (112 bytes for 7 of text), empty keys nested as deep as
  // may be, one-byte keys.
  documents.push_back(repeated("[", R"({"":0})", "]", 20000, false));
  std::string keys;
  for (char c = 'a'; c <= 'z'; ++c) keys += std::string(keys.empty() ? "" : ",") + '"' + c + "\":0";
  documents.push_back(repeated("[", "{" + keys + "}", "]", 2000, false));
  std::string chain;
  for (std::size_t level = 0; level + 1 < kMaxJsonDepth; ++level) chain += R"({"":)";
  documents.push_back(chain + "0" + std::string(kMaxJsonDepth - 1, '}'));
  for (const std::string& text : documents)
    EXPECT_LE(json_dom_bytes(text, "x.json"), text.size() * kMostDomBytesPerTextByte) << text.substr(0, 60);
  EXPECT_EQ(error_or_none([] { (void)json_dom_bytes("[1,", "x.json"); }).rfind("x.json: malformed JSON: ", 0), 0u);
}

TEST(JsonReader, RefusesDeepNestingBeforeBuildingIt) {
  const auto parse_error = [](const std::string& text) {
    return error_or_none([&] { (void)parse_json(text, "x.json"); });
  };
  const std::string deep = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(parse_error(deep), "(no error)");
  // 50 MB of '[' used to grow the duplicate-key pass to gigabytes and end in std::bad_alloc.
  const std::string hostile(50'000'000, '[');
  const std::string message = parse_error(hostile);
  EXPECT_NE(message.find("x.json: "), std::string::npos) << message.substr(0, 300);
  EXPECT_NE(message.find(": nested deeper than 128 levels"), std::string::npos) << message.substr(0, 300);
  EXPECT_LT(message.size(), 300u);
  const std::string in_member = parse_error(R"({"a": )" + std::string(kMaxJsonDepth, '['));
  EXPECT_EQ(in_member.rfind("x.json: a[0][0][0]", 0), 0u) << in_member;
  EXPECT_NE(in_member.find("...: nested deeper than 128 levels"), std::string::npos) << in_member;
}

/** "" where parse_json and its reference path give the same document or the same error, else what differs. */
std::string fast_against_reference(const std::string& text) {
  std::string fast_error, reference_error;
  nlohmann::json fast, reference;
  try {
    fast = parse_json(text, "x.json");
  } catch (const Error& e) {
    fast_error = e.what();
  }
  try {
    reference = parse_json_reference(text, "x.json");
  } catch (const Error& e) {
    reference_error = e.what();
  }
  if (fast_error != reference_error) return "errors: '" + fast_error + "' against '" + reference_error + "'";
  if (fast_error.empty() && !identical_json(fast, reference)) return fast.dump() + " against " + reference.dump();
  return "";
}

TEST(JsonReader, TheFastPathBuildsWhatTheReferenceBuildsAndRefusesWhatItRefuses) {
  const std::string deep = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  const std::vector<std::string> documents = {
      // numbers at every edge of their kinds
      "[0, -0, 0.0, -0.0, 1, -1, 1.0, 1e2, 1E+2, 1e-2, 0e5, -0e5, 2.5, 0.1, 1e300, 5e-324, 1e-400]",
      "[2.2250738585072014e-308, 4.9406564584124654e-324, 2.225073858507201e-308]",
      "[9223372036854775807, 9223372036854775808, -9223372036854775808, -9223372036854775809]",
      "[18446744073709551615, 18446744073709551616, 123456789012345678901234567890, 1.7976931348623157e308]",
      "[1e400, -1e400]", "1" + std::string(400, '0'), "[0.30000000000000004, 3.141592653589793238462643383279]", "[01]",
      "[1.]", "[.5]", "[-]", "[+1]", "[1e]", "[0x10]", "[NaN]", "[Infinity]",
      // strings and escapes
      R"(["", "a\"b\\c\/d\b\f\n\r\t", "\u00e9\u20ac", "\ud83d\ude00", "é€😀"])", R"(["\ud800"])", R"(["\udc00x"])",
      R"(["\u0000"])", "[\"a\tb\"]", "[\"a\nb\"]", "[\"\xff\"]", "[\"\xc3\"]", "[\"\xed\xa0\x80\"]", "[\"a\\x\"]",
      // structure
      "{}", "[]", "null", "true", "false", "\"s\"", "  [1 , 2 ]\n\t\r ", "", " ", "[1,]", "[1 2]", "{\"a\" 1}",
      "{\"a\": 1,}", "{1: 2}", "[] []", "[]x", "[1]\n", "\xef\xbb\xbf[1]", "[tru]", "[nul]", std::string("[1]\0", 4),
      R"({"a": 1, "a": 2})", R"({"b": {"a": 1}, "c": {"a": 1}})", R"({"a": [{"x": 1, "x": 1}]})", deep,
      "[" + deep + "]", R"({"z": 1, "a": {"m": [1, {"k": null}]}})"};
  for (const std::string& text : documents) EXPECT_EQ(fast_against_reference(text), "") << text.substr(0, 80);
  // Numbers as a task file writes them, and as a person might: random digits, signs and exponents.
  std::mt19937_64 rng(4164);
  const auto digits = [&](int count) {
    std::string out;
    for (int i = 0; i < count; ++i) out += static_cast<char>('0' + rng() % 10);
    return out;
  };
  std::string numbers = "[";
  for (int i = 0; i < 3000; ++i) {
    std::string n = (rng() % 3 == 0 ? "-" : "") + std::to_string(1 + rng() % 9) + digits(static_cast<int>(rng() % 22));
    if (rng() % 2) n += "." + digits(1 + static_cast<int>(rng() % 20));
    if (rng() % 3 == 0) n += (rng() % 2 ? "e-" : "e") + std::to_string(rng() % 330);
    numbers += (i ? "," : "") + n;
  }
  EXPECT_EQ(fast_against_reference(numbers + "]"), "");
}

TEST(JsonReader, KeepsMessagesOnOneLineAndShort) {
  const std::string control = read_error(R"({"a\nb": 1})", [](const JsonNode& r) { r.only_keys({"ab"}); });
  EXPECT_EQ(control, "x.json: a\\x0ab: unknown field (expected ab)");
  const std::string utf8 = read_error("{\"\xc3\xbc\": 1}", [](const JsonNode& r) { r.only_keys({}); });
  EXPECT_NE(utf8.find("x.json: \xc3\xbc: unknown field"), std::string::npos) << utf8;
  const std::string key(1000, 'k');
  const std::string long_path =
      read_error("{\"" + key + "\": 1}", [&](const JsonNode& r) { (void)r.at(key).as_string(); });
  EXPECT_NE(long_path.find("...: expected a string, got 1"), std::string::npos) << long_path;
  EXPECT_LT(long_path.size(), 300u);
  EXPECT_EQ(printable("a\tb\x7f\xc3\xbc", false), "a\\x09b\\x7f\\xc3\\xbc");
  EXPECT_EQ(printable("a\tb\xc3\xbc", true), "a\\x09b\xc3\xbc");
}

}  // namespace
}  // namespace embshard::detail
