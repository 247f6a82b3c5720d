// The whole conversion: read a dump, symbolize it, write the Firefox Profiler JSON (or folded
// stacks, or a text summary).
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLICATE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLICATE_H_

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "convert/profile_converter.h"
#include "convert/source_embedder.h"
#include "symbolize/cache/symbol_cache.h"
#include "symbolize/debug_file_locator.h"
#include "symbolize/parallel_symbolizer.h"
#include "write/output_formats.h"

namespace inprof::symbolicate {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
// The output was written, but the dump lost records on the way (damage, no process record).
inline constexpr int kExitDamaged = 3;

struct RunOptions {
  std::string dump_path;
  // More than one dump (or a directory of them: expand_dump_paths): each a process, merged into
  // one profile. Empty: dump_path alone.
  std::vector<std::string> dump_paths;
  std::string output_path;  // "-" writes to stdout
  const OutputFormatSpec* format = &default_output_format();
  bool gzip =
      false;        // gzip the output (also when output_path ends in ".gz", or format->always_gzip)
  size_t top = 15;  // --summary: functions listed per thread and ranking
  FoldedWeight folded_weight = FoldedWeight::kSamples;  // --format folded: what a line counts
  LocateOptions locate;
  unsigned jobs = 0;                                         // 0: one thread per CPU
  size_t min_addresses_per_handle = kMinAddressesPerHandle;  // see parallel_symbolizer.h
  bool progress = false;       // a progress bar on `err` (only for large dumps)
  bool quiet_modules = false;  // leave out the per-module summary
  bool quiet = false;          // warnings and errors only on stderr
  bool exiting_after = false;  // the process exits next: the tables are not freed
  // Waits at least this long become markers in their thread's track (none: no wait markers).
  std::optional<uint64_t> wait_marker_ns = kDefaultWaitMarkerNs;
  bool no_symbols = false;     // frames named module+0x...; the viewer symbolicates them
  SourceEmbedOptions sources;  // the source view's text (JSON output only)
  // The persistent symbol cache (symbol_cache.h): empty, none (the CLI's default is
  // default_symbol_cache_dir()); bounded to cache_max_bytes.
  std::string cache_dir;
  uint64_t cache_max_bytes = kDefaultSymbolCacheBytes;
};

// What --open's symbol server needs to answer for the profile just written (serve/).
struct ProfileSymbolInfo {
  std::vector<Lib> libs;                            // the profile's, by LibIndex
  std::vector<internal::ModuleRecord> lib_modules;  // the module behind each lib
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> lib_images;  // the dump's copies
  std::vector<std::vector<uint64_t>> lib_frame_addresses;  // sorted, per lib: frameTable.address
  LocateOptions locate;
};

// Returns the process exit status: kExitOk, or kExitError or kExitDamaged after printing one
// "symbolicate: error: ..." line to `err`. Warnings and statistics also go to `err`.
int run_symbolicate(const RunOptions& options, std::FILE* err,
                    ProfileSymbolInfo* symbol_info = nullptr);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLICATE_H_
