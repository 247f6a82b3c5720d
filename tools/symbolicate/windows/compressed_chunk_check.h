// The Windows build has no zstd (Debian has none for MinGW-w64): it reads the stored,
// uncompressed chunks that Windows dumps are written with (lib/dump/stored_frames.h). A dump with
// zstd-compressed chunks (one written on Linux) must be refused as a whole, not converted with
// chunks silently missing.
#ifndef INPROF_TOOLS_SYMBOLICATE_WINDOWS_COMPRESSED_CHUNK_CHECK_H_
#define INPROF_TOOLS_SYMBOLICATE_WINDOWS_COMPRESSED_CHUNK_CHECK_H_

#include <optional>
#include <string>

namespace inprof::symbolicate {

// Why the dump at `path` cannot be read by this build (its first compressed chunk), or nullopt
// when it has none. Other problems (a missing file, damaged chunks) are left to the reader.
std::optional<std::string> find_compressed_chunk(const std::string& path);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_WINDOWS_COMPRESSED_CHUNK_CHECK_H_
