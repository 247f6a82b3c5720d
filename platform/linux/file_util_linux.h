// Small file helpers for reading /proc.
#ifndef INPROF_PLATFORM_LINUX_FILE_UTIL_LINUX_H_
#define INPROF_PLATFORM_LINUX_FILE_UTIL_LINUX_H_

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace inprof::internal {

// Reads a whole (small, /proc-like) file; false if it cannot be opened.
inline bool read_small_file(const char* path, std::string* out, size_t limit = 16u << 20) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return false;
    }
    if (n == 0 || out->size() >= limit) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_FILE_UTIL_LINUX_H_
