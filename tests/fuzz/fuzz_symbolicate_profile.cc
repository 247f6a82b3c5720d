// libFuzzer target: symbolicate's whole conversion after the reader, on records from the input
// (compressed into a dump as in fuzz_dump_records): the profile model, address-to-module
// mapping, leaf fix-up, markers, counters, JIT names and the JSON writer. Any path a module
// record names is opened as symbolicate would (regular files only).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "convert/profile_builder.h"
#include "convert/profile_converter.h"
#include "diagnostics.h"
#include "dump/dump_reader.h"
#include "fuzz_support.h"
#include "read/profile_model.h"
#include "write/profile_json_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inprof::symbolicate;
  static std::FILE* sink = std::fopen("/dev/null", "wb");
  if (sink == nullptr) std::abort();
  const auto file = inprof::fuzz::dump_of_records(std::span<const uint8_t>(data, size));
  ProfileModel model;
  const auto read = inprof::internal::read_dump(file, model);
  if (!read.ok) std::abort();
  Diagnostics diag;  // keeps warnings, prints nothing
  ProfileBuilder builder;
  convert_profile(model, builder, diag);
  if (!write_profile_json(builder, sink)) std::abort();
  return 0;
}
