#include "symbolicate.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "diagnostics.h"
#include "dump/dump_reader.h"
#include "profile_builder.h"
#include "profile_converter.h"
#include "profile_json_writer.h"
#include "profile_model.h"

namespace inprof::symbolicate {
namespace {

int fail(std::FILE* err, const std::string& message) {
  std::fprintf(err, "symbolicate: error: %s\n", message.c_str());
  return kExitError;
}

}  // namespace

int run_symbolicate(const RunOptions& options, std::FILE* err) {
  Diagnostics diag(err);
  ProfileModel model;
  internal::DumpReadResult read = internal::read_dump_file(options.dump_path, model);
  if (!read.ok) return fail(err, read.error);
  for (const std::string& w : read.warnings) diag.warn(w);
  if (!read.complete) {
    diag.warn(
        "the dump has no end record (the session did not stop cleanly); using every "
        "complete record");
  }
  if (model.orphan_repeats()) {
    diag.warn(std::to_string(model.orphan_repeats()) +
              " repeat samples had no earlier sample on their thread; they have no stack");
  }
  if (const auto& s = model.stats()) {
    diag.info("dump statistics: " + std::to_string(s->samples_recorded) + " samples recorded, " +
              std::to_string(s->samples_dropped) + " dropped (buffer full), " +
              std::to_string(s->threads_timed_out) + " sampling attempts timed out, " +
              std::to_string(s->ticks_late) + " ticks late");
  }

  // Open the output before the slow part, so a bad path fails at once.
  bool to_stdout = options.output_path == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(options.output_path.c_str(), "wb");
  if (!out) {
    return fail(err, "cannot write '" + options.output_path + "': " + std::strerror(errno));
  }

  ProfileBuilder builder;
  ConversionSummary summary = convert_profile(model, builder, diag);

  bool ok = write_profile_json(builder, out);
  int close_error = 0;
  if (to_stdout) {
    ok = std::fflush(out) == 0 && ok;
  } else if (std::fclose(out) != 0) {
    close_error = errno;
    ok = false;
  }
  if (!ok) {
    std::string why = close_error ? std::strerror(close_error) : "write error";
    if (!to_stdout) std::remove(options.output_path.c_str());
    return fail(err, "cannot write '" + options.output_path + "': " + why);
  }

  size_t samples = 0;
  for (const Thread& t : builder.threads()) samples += t.samples.size();
  diag.info("wrote " + options.output_path + ": " + std::to_string(builder.threads().size()) +
            " threads, " + std::to_string(samples) + " samples, " +
            std::to_string(model.stack_count()) + " distinct stacks, " +
            std::to_string(summary.modules_symbolicated) + " of " +
            std::to_string(summary.modules_used) + " modules in use symbolicated");
  if (const JitMap& jit = model.jit_map(); jit.lines()) {
    diag.info("JIT map: " + std::to_string(jit.range_count()) + " code ranges, " +
              std::to_string(summary.jit_frames) + " frame addresses named by it");
  }
  return kExitOk;
}

}  // namespace inprof::symbolicate
