// libFuzzer target: the task and table-statistics JSON readers must reject any input with
// embshard::Error (or accept it as a valid task), never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "embshard/core/error.h"
#include "embshard/data/data_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const embshard::Task task = embshard::task_from_json(text, "fuzz");
    (void)embshard::task_to_json(task);
  } catch (const embshard::Error&) {
  }
  try {
    (void)embshard::stats_from_json(text, "fuzz");
  } catch (const embshard::Error&) {
  }
  return 0;
}
