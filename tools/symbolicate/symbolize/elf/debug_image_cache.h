// The inflated debug image (debug_image.h) kept in the symbol cache (symbol_cache.h) between
// runs: inflating python3.11's compressed DWARF was over a third of a run's CPU when only a few
// hundred new addresses were left to symbolize. The file is the image's bytes followed by a
// trailer (magic, size, checksum of the bytes): a missing, truncated or damaged file is not
// used, never read as DWARF. Written to a temporary name and renamed into place, as the symbol
// files are; the cache's size bound and eviction count these files too. The whole-file check is
// made once: a stamp beside the image (<image>.stamp) records the file it was made on, and a run
// that finds the very same file (inode, size, change time) does not read it all again.
#ifndef INPROF_TOOLS_SYMBOLICATE_DEBUG_IMAGE_CACHE_H_
#define INPROF_TOOLS_SYMBOLICATE_DEBUG_IMAGE_CACHE_H_

#include <memory>
#include <string>

#include "symbolize/elf/debug_image.h"

namespace inprof::symbolicate {

// The image cached at `cache_path` for the debug file `debug_path`; null if there is none
// that is intact.
std::unique_ptr<DebugImage> load_cached_debug_image(const std::string& cache_path,
                                                    const std::string& debug_path);
// The stamp kept beside the image at `cache_path`.
std::string debug_image_stamp_path(const std::string& cache_path);
// Writes `image` to `cache_path`. A failure leaves the cache as it was, silently: the image is
// only a shortcut.
void save_debug_image(const DebugImage& image, const std::string& cache_path);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DEBUG_IMAGE_CACHE_H_
