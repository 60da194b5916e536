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

//
// CRC-32: almost every mutation of a tensor's bytes breaks its record's zip CRC, which would stop
// the reader before the table validation behind it. So an input the reader rejects with CRCs
// checked is read a second time with `verify_crc` = false (DlrmFileReader::from_bytes): the first
// pass fuzzes the CRC code, the second everything after it.
namespace {

bool read_all(const std::uint8_t* data, std::size_t size, bool verify_crc) {
  try {
    embshard::DlrmFileReader reader = embshard::DlrmFileReader::from_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.pt", verify_crc);
    reader.for_each_table(
        [](std::int64_t, const embshard::TableBatch& batch) { (void)embshard::compute_table_stats(batch); });
    embshard::Context ctx;
    ctx.verbosity = embshard::LogLevel::kQuiet;
    (void)reader.compute_stats(ctx);
  } catch (const embshard::Error&) {
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!read_all(data, size, true)) (void)read_all(data, size, false);
  return 0;
}
