// libFuzzer target, structure-aware: the input is the decompressed content of a chunk (records
// framed as `u8 type | varint size | payload`); the harness compresses it into a valid dump so
// that every mutation reaches the record decoders. The first byte, when odd, also cuts the
// frame short (a killed writer) by a few bytes.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "counting_visitor.h"
#include "dump/dump_reader.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t cut = 0;
  if (size > 0 && (data[0] & 1)) cut = 1 + data[0] % 16;
  const auto file = inprof::fuzz::dump_of_records(std::span<const uint8_t>(data, size), cut);
  inprof::fuzz::CountingVisitor visitor;
  const auto result = inprof::internal::read_dump(file, visitor);
  if (!result.ok || visitor.records > result.records) std::abort();
  // An intact frame is one chunk, delivered or reported; a cut one is always reported.
  if (cut == 0 && result.chunks != 1) std::abort();
  if (cut != 0 && result.warnings.empty()) std::abort();
  return 0;
}
