#include "gzip_stream.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>

namespace inprof::symbolicate {
namespace {

ssize_t gz_write(void* cookie, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    // gzwrite takes an unsigned length; write in pieces well below its limit.
    unsigned piece = static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
    int n = gzwrite(static_cast<gzFile>(cookie), data + done, piece);
    if (n <= 0) {
      errno = EIO;
      return done ? static_cast<ssize_t>(done) : -1;
    }
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(size);
}

int gz_close(void* cookie) {
  if (gzclose(static_cast<gzFile>(cookie)) != Z_OK) {
    errno = EIO;
    return -1;
  }
  return 0;
}

std::FILE* wrap(gzFile gz) {
  if (!gz) return nullptr;
  gzbuffer(gz, 1 << 17);
  cookie_io_functions_t io = {};
  io.write = gz_write;
  io.close = gz_close;
  std::FILE* f = fopencookie(gz, "w", io);
  if (!f) gzclose(gz);
  return f;
}

}  // namespace

std::FILE* open_gzip_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  return open_gzip_stream(fd, true);
}

std::FILE* open_gzip_stream(int fd, bool close_fd) {
  int own = close_fd ? fd : ::dup(fd);
  if (own < 0) return nullptr;
  // Level 1: profiles are long runs of small numbers; the faster levels shrink them nearly as
  // well, several times faster.
  gzFile gz = gzdopen(own, "wb1");
  if (!gz) {
    ::close(own);
    errno = ENOMEM;
    return nullptr;
  }
  return wrap(gz);
}

}  // namespace inprof::symbolicate
