// Turns the raw profile collected from a dump into processed-format tables: maps addresses to
// modules, symbolizes them, applies the leaf fix-up and builds the stack, frame and func tables.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_CONVERTER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_CONVERTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/profile_builder.h"
#include "diagnostics.h"
#include "read/profile_model.h"
#include "symbolize/cache/symbol_cache.h"
#include "symbolize/debug_file_locator.h"
#include "symbolize/parallel_symbolizer.h"

namespace inprof::symbolicate {

// Waits this long or longer are markers unless told otherwise (--wait-markers).
inline constexpr uint64_t kDefaultWaitMarkerNs = 10'000'000;

struct ConvertOptions {
  LocateOptions locate;  // where debug files and binaries are looked for
  unsigned jobs = 0;     // symbolizing threads; 0: one per CPU
  size_t min_addresses_per_handle = kMinAddressesPerHandle;
  // Called now and then while addresses are symbolized (null: never).
  std::function<void(size_t done, size_t total)> progress;
  // The process exits right after: what symbolization built (debug-file handles, every
  // address's frames) is left to the OS instead of being freed piece by piece.
  bool exiting_after = false;
  // Leave every native frame named by its module and address (symbolicate --no-symbols): the
  // profile says it is not symbolicated, and the viewer asks a symbol server (--open's).
  bool no_symbols = false;
  // A thread's waits of at least this long (issue 43) become "Wait" markers in its track, each
  // with its reason and the stack it waited in (none: no such markers).
  std::optional<uint64_t> wait_marker_ns = kDefaultWaitMarkerNs;
  // Where symbolized addresses are kept between runs, per module build-id (null: nowhere).
  std::shared_ptr<const SymbolCache> cache;
};

// How one module that samples point into was symbolicated.
struct ModuleReport {
  enum Status { kDwarf, kSymbolsOnly, kNone };
  std::string path;  // as recorded
  std::string build_id;
  Status status = kNone;
  std::string source;                 // the file that gave the names, if any
  std::string detail;                 // where it was found, or why nothing was
  std::vector<std::string> rejected;  // files that were found but not used, and why
  size_t addresses = 0;               // distinct addresses looked up in it
  size_t unnamed_frames = 0;          // distinct frame addresses left named module+0x...
  std::string unnamed_why;            // why they are
};

struct ConversionSummary {
  size_t modules_used = 0;          // modules some sample points into
  size_t modules_symbolicated = 0;  // of those, how many had a usable file
  size_t leaf_callers_inserted = 0;
  size_t jit_frames = 0;              // distinct frame addresses named by the JIT map
  size_t unmapped_frames = 0;         // distinct frame addresses in no module, left as 0x...
  size_t unique_addresses = 0;        // distinct (module, address) pairs symbolized
  double symbolize_seconds = 0;       // wall time of the parallel symbolization
  double symbolize_cpu_seconds = 0;   // its CPU time, all threads together
  unsigned threads = 1;               // that it used
  size_t cache_hits = 0;              // addresses the symbol cache knew
  size_t cache_indexed = 0;           // of which its module index answered
  size_t modules_opened = 0;          // modules whose reader was opened (libdwfl, DbgHelp, ...)
  size_t cache_misses = 0;            // addresses of cached modules symbolized afresh
  std::vector<ModuleReport> modules;  // the modules used, in dump order
  // The module behind each of the profile's libs (by LibIndex): what --open's symbol server
  // needs to find a lib's files and turn its lib-relative addresses into the module's own.
  std::vector<internal::ModuleRecord> lib_modules;
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> lib_images;  // the dump's copy, if any
};

// Fills `builder` from `model`. Problems (unusable module files, ...) go to `diag`.
ConversionSummary convert_profile(const ProfileModel& model, ProfileBuilder& builder,
                                  Diagnostics& diag, const ConvertOptions& options = {});

// Helpers exposed for tests.
std::string breakpad_id(const std::vector<uint8_t>& build_id);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_CONVERTER_H_
