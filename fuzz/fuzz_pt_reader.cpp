// Fuzz target: the DLRM dataset reader on arbitrary bytes (zip, legacy, gzip of either).
// Only embshard::Error may escape the reader; any other exception, a crash or a sanitizer report
// is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/data/dlrm_file.h"
#include "embshard/data/index_batch.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    embshard::DlrmFileReader reader = embshard::DlrmFileReader::from_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.pt");
    reader.for_each_table([](std::int64_t, const embshard::TableBatch& batch) {
      (void)embshard::compute_table_stats(batch);
    });
    embshard::Context ctx;
    ctx.verbosity = embshard::LogLevel::kQuiet;
    (void)reader.compute_stats(ctx);
  } catch (const embshard::Error&) {
  }
  return 0;
}
