// Opening a file the profiler writes (dump, capture, crash file) on Linux: the open never blocks,
// never follows a link, accepts regular files only, and never takes a file another live process
// is writing (an exclusive lock held while the file is open says so).
#ifndef INPROF_PLATFORM_LINUX_OUTPUT_OPEN_LINUX_H_
#define INPROF_PLATFORM_LINUX_OUTPUT_OPEN_LINUX_H_

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace inprof::internal {

// Returns a descriptor (mode 0600, truncated, close-on-exec, blocking writes), or -1 with `*error`
// set; `*held_elsewhere` then says whether another process holds the file. `what` names the file
// in messages ("" for the dump, "crash file ").
inline int open_output_file(const std::string& path, const std::string& what, std::string* error,
                            bool* held_elsewhere) {
  *held_elsewhere = false;
  // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of waiting for one. No
  // O_TRUNC: the file is truncated only once the lock says nobody else is writing it.
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) {
      *error = "refusing to write " + what + "'" + path + "': it is a symbolic link";
    } else if (err == ENXIO) {
      *error = "refusing to write " + what + "'" + path + "': not a regular file";
    } else {
      *error = "cannot create " + what + "'" + path + "': " + std::strerror(err);
    }
    return -1;
  }
  auto fail = [&](const std::string& message) {
    ::close(fd);
    *error = message;
    return -1;
  };
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("refusing to write " + what + "'" + path + "': not a regular file");
  }
  // An open-file-description lock (F_OFD_SETLK): it belongs to this open file, which the writing
  // thread keeps in a descriptor table of its own (process_info.h), so it stays held however
  // the program's table changes, and goes with the file's last descriptor. (A process lock would
  // be owned by the table that took it, and dropped by a close in that table.)
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    if (errno == EAGAIN || errno == EACCES) {
      *held_elsewhere = true;
      return fail(what + "'" + path + "' is being written by another process");
    }
    // Anything else (a file system without locks): written unlocked, as before locks existed.
  }
  if (ftruncate(fd, 0) != 0) {
    return fail("cannot truncate " + what + "'" + path + "': " + std::strerror(errno));
  }
  // An existing file keeps its mode when truncated: make it private as promised.
  if (fchmod(fd, 0600) != 0) {
    return fail("cannot make " + what + "'" + path + "' private: " + std::strerror(errno));
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_OUTPUT_OPEN_LINUX_H_
