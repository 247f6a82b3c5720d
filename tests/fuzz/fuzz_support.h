// Shared by the fuzz targets: wraps bytes as a dump file whose one chunk is a zstd frame of them,
// so that mutations reach the record parser instead of dying in the decompressor.
#ifndef INPROF_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define INPROF_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <zstd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "dump/dump_records.h"

namespace inprof::fuzz {

// A dump file: header, then `records` as one zstd frame (level 1: the fuzzer runs this each time).
// `cut` > 0 drops that many bytes from the end (at most all but one), as a killed writer would.
inline std::vector<uint8_t> dump_of_records(std::span<const uint8_t> records, size_t cut = 0) {
  std::vector<uint8_t> file(internal::kDumpHeaderSize, 0);
  std::memcpy(file.data(), internal::kDumpMagic, 8);
  file[8] = static_cast<uint8_t>(internal::kDumpFormatVersion);
  const size_t bound = ZSTD_compressBound(records.size());
  file.resize(internal::kDumpHeaderSize + bound);
  const size_t n = ZSTD_compress(file.data() + internal::kDumpHeaderSize, bound, records.data(),
                                 records.size(), 1);
  if (ZSTD_isError(n)) std::abort();  // cannot happen with a bound-sized buffer
  file.resize(internal::kDumpHeaderSize + n - (cut < n ? cut : n - 1));
  return file;
}

}  // namespace inprof::fuzz

#endif  // INPROF_TESTS_FUZZ_FUZZ_SUPPORT_H_
