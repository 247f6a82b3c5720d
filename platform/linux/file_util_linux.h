// Small file helpers for reading /proc.
#ifndef INPROF_PLATFORM_LINUX_FILE_UTIL_LINUX_H_
#define INPROF_PLATFORM_LINUX_FILE_UTIL_LINUX_H_

#include <fcntl.h>

#include <cstdint>
#include <string>

#include "owned_fd_linux.h"

namespace inprof::internal {

// One entry of getdents64(2)'s answer (glibc declares no such type for the raw call).
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// Reads a whole (small, /proc-like) file; false if it cannot be opened or read. The descriptor
// lives for the call only and is checked before each use (owned_fd_linux.h).
inline bool read_small_file(const char* path, std::string* out, size_t limit = 16u << 20) {
  OwnedFd file(path, O_RDONLY);
  if (!file.is_open()) return false;
  out->clear();
  char buf[16384];
  for (;;) {
    const ssize_t n = file.read(buf, sizeof(buf));
    if (n < 0) return false;
    if (n == 0 || out->size() >= limit) break;
    out->append(buf, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_FILE_UTIL_LINUX_H_
