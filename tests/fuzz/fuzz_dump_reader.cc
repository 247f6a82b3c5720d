// libFuzzer target: a whole dump file, as bytes on disk (header, zstd frames, damage anywhere).
// The reader must deliver what it can and report the rest, never crash, hang or over-allocate.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "counting_visitor.h"
#include "dump/dump_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inprof::fuzz::CountingVisitor visitor;
  const auto result = inprof::internal::read_dump(std::span<const uint8_t>(data, size), visitor);
  // What the reader promises: an error only when nothing was read; unknown record types are
  // counted but not delivered.
  if (!result.ok && (result.error.empty() || visitor.records != 0)) std::abort();
  if (result.ok && visitor.records > result.records) std::abort();
  return 0;
}
