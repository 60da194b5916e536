// The strict JSON reader's two paths (src/core/json_reader.h) on one file: parse_json (simdjson,
// then nlohmann's document built from its tape) against parse_json_reference (nlohmann's SAX), in
// turn, each timed with freeing its document. Prints one CSV row per repeat:
//   file,bytes,repeat,fast_s,reference_s
// Usage: build/bin/embshard_json_bench FILE [REPEATS]   (default 3; e.g. a scale task's 000.json)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/json_reader.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace {

/** Seconds `parse` takes on `text`, the document freed within them. */
template <typename Parse>
double seconds_of(const Parse& parse, const std::string& text) {
  const auto start = std::chrono::steady_clock::now();
  { const nlohmann::json document = parse(text, "bench"); }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s FILE [REPEATS]\n", argv[0]);
    return 2;
  }
  try {
    const std::string text = embshard::read_file(argv[1]);
    const int repeats = argc == 3 ? std::atoi(argv[2]) : 3;
    std::printf("file,bytes,repeat,fast_s,reference_s\n");
    for (int r = 1; r <= repeats; ++r) {
      const double fast = seconds_of(embshard::detail::parse_json, text);
      const double reference = seconds_of(embshard::detail::parse_json_reference, text);
      std::printf("%s,%zu,%d,%.4f,%.4f\n", argv[1], text.size(), r, fast, reference);
    }
  } catch (const embshard::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
