// Finds, for one module of a dump, the files to symbolicate it with: the binary (symbols, CFI)
// and the file holding its DWARF, wherever a release build's debug files were put. A file is
// used only if its GNU build-id is the one the dump recorded (debuglink targets also need the
// right CRC), so symbols can never come from another build. A Mach-O module (macOS) is matched
// the same way by its LC_UUID, and its DWARF looked for in a .dSYM bundle
// (X.dSYM/Contents/Resources/DWARF/X) next to the binary or in a --debug-dir.
#ifndef INPROF_TOOLS_SYMBOLICATE_DEBUG_FILE_LOCATOR_H_
#define INPROF_TOOLS_SYMBOLICATE_DEBUG_FILE_LOCATOR_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dump/dump_records.h"

namespace inprof::symbolicate {

class DebugImage;  // debug_image.h (Linux)

struct LocateOptions {
  std::vector<std::string> debug_dirs;   // --debug-dir: .build-id/xx/rest.debug or by file name
  std::vector<std::string> binary_dirs;  // --binary-dir: binaries not at their recorded paths
  std::string system_debug_dir = "/usr/lib/debug";  // empty: not searched
  bool debuginfod = false;                          // ask debuginfod (DEBUGINFOD_URLS)
  // The dump's architecture ("x86_64", "aarch64"): picks the slice of a fat Mach-O file and
  // refuses a thin one built for another. Empty: a fat file's first slice.
  std::string arch;
};

struct ModuleFiles {
  std::string binary;  // the module's own ELF file; empty if only a debug file was found
  std::string debug;   // the file with DWARF (== binary when it has its own); empty: none
  std::string origin;  // where the DWARF came from, e.g. "build-id in /usr/lib/debug"
  std::vector<std::string> rejected;  // candidates that were not used, and why
  // `debug` with its DWARF already inflated, shared by every handle opened on these files
  // (prepare_for_handles in module_symbolizer.h); null: handles read `debug` itself.
  std::shared_ptr<const DebugImage> debug_image;
  // Mach-O files (a macOS module): read by macho_symbolizer.h, their slice for `arch`.
  bool macho = false;
  std::string arch;
  // Where the inflated image is kept between runs (the symbol cache's DIR/v<version>/KEY.img,
  // debug_image_cache.h); empty: it is not.
  std::string image_cache;
};

// The files for `module`. nullopt, with the reasons in `why`, when no usable file was found.
// `image`: the module's bytes, when the dump holds them (the vDSO, which has no file).
std::optional<ModuleFiles> locate_module_files(const internal::ModuleRecord& module,
                                               const LocateOptions& options, std::string* why,
                                               std::span<const uint8_t> image = {});

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DEBUG_FILE_LOCATOR_H_
