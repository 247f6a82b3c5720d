#include "read/dump_file_read.h"

#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstring>

namespace inprof::symbolicate {

#if defined(_WIN32)
// The incremental reader's std::ifstream reads Windows files in binary mode: left to it.
std::optional<WholeDumpFile> read_small_dump_file(const std::string&, size_t) {
  return std::nullopt;
}
#else
std::optional<WholeDumpFile> read_small_dump_file(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      static_cast<uint64_t>(st.st_size) > limit) {
    ::close(fd);
    return std::nullopt;
  }
  // One byte more than the file holds: a read that fills it says the file grew meanwhile.
  size_t capacity = static_cast<size_t>(st.st_size) + 1;
  WholeDumpFile file;
  file.data.reset(new uint8_t[capacity]);  // not zeroed: every byte used is read into
  for (;;) {
    if (file.size == capacity) {
      if (capacity > limit) {  // grew past the limit while read: the incremental reader's
        ::close(fd);
        return std::nullopt;
      }
      const size_t grown = capacity * 2;
      std::unique_ptr<uint8_t[]> bigger(new uint8_t[grown]);
      std::memcpy(bigger.get(), file.data.get(), file.size);
      file.data = std::move(bigger);
      capacity = grown;
    }
    const ssize_t n = ::read(fd, file.data.get() + file.size, capacity - file.size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {  // a read error: the incremental reader reports it
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    file.size += static_cast<size_t>(n);
  }
  ::close(fd);
  return file;
}
#endif

}  // namespace inprof::symbolicate
