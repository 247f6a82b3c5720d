// A stdio stream that gzip-compresses what is written to it (the Firefox Profiler loads gzipped
// profiles as they are), so every writer that takes a FILE* can produce .json.gz.
#ifndef INPROF_TOOLS_SYMBOLICATE_GZIP_STREAM_H_
#define INPROF_TOOLS_SYMBOLICATE_GZIP_STREAM_H_

#include <cstdio>
#include <string>

namespace inprof::symbolicate {

// The Windows build has none: these need glibc's fopencookie (gzip_stream_windows.cc).
#if defined(_WIN32)
inline constexpr bool kHaveGzipOutput = false;
#else
inline constexpr bool kHaveGzipOutput = true;
#endif

// Creates (or truncates) `path`. Null, with errno set, on failure. fclose() finishes the gzip
// stream and reports a failed write.
std::FILE* open_gzip_file(const std::string& path);
// Writes to an open descriptor; `close_fd`: fclose() closes it too.
std::FILE* open_gzip_stream(int fd, bool close_fd);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_GZIP_STREAM_H_
