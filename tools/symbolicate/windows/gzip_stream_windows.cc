// The Windows build writes no gzip: gzip_stream.cc needs glibc's fopencookie, which the Windows C
// runtime lacks. main.cc refuses a .gz output there with a clear message; these only fail.
#include <cerrno>

#include "write/gzip_stream.h"

namespace inprof::symbolicate {

std::FILE* open_gzip_file(const std::string&) {
  errno = ENOSYS;
  return nullptr;
}

std::FILE* open_gzip_stream(int, bool) {
  errno = ENOSYS;
  return nullptr;
}

}  // namespace inprof::symbolicate
