// The profiler's threads on a descriptor table of their own (unshare(CLONE_FILES)): a thread's
// copy of the table is its alone, so its opens never take the lowest free number the program
// expects (a daemon reopening 0-2, `close_range` then `open`), and the program's close_range or
// dup2 never reaches ours. POSIX record locks are owned per table, so closing the copies of the
// program's descriptors (done at once: a copy of a pipe's end would keep the pipe open) drops none
// of the program's locks.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "file_util_linux.h"
#include "owned_fd_linux.h"
#include "seccomp_state_linux.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

__attribute__((tls_model("initial-exec"))) thread_local bool t_private_table = false;

// Closes every descriptor of this thread's (private) table but `keep`.
void close_all_but(int keep) {
  bool done = keep < 0 ? syscall(SYS_close_range, 0u, ~0u, 0u) == 0
                       : (keep == 0 || syscall(SYS_close_range, 0u, unsigned(keep - 1), 0u) == 0) &&
                             syscall(SYS_close_range, unsigned(keep + 1), ~0u, 0u) == 0;
  if (done) return;
  // Kernels before 5.9: the table's own listing, read again until nothing else is left.
  for (int round = 0; round < 64; ++round) {
    const int dir = ::open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    alignas(8) char buf[4096];
    bool closed_any = false;
    long n;
    while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
      for (long pos = 0; pos < n;) {
        auto* entry = reinterpret_cast<LinuxDirent64*>(buf + pos);
        pos += entry->d_reclen;
        char* end;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == dir || fd == keep) continue;
        closed_any |= ::close(static_cast<int>(fd)) == 0;
      }
    }
    ::close(dir);
    if (!closed_any) return;
  }
}

}  // namespace

bool use_private_descriptor_table(int keep) {
#if defined(__SANITIZE_THREAD__) || defined(INPROF_TSAN)
  // ThreadSanitizer keeps one descriptor table per process: the same number opened in the
  // sampler's table and closed in the writer's (two files) is reported as a race. Its builds
  // take the shared table's way (every descriptor checked before use), which it can follow.
  (void)keep;
  return false;
#else
  // Under a seccomp filter even unshare() may be fatal.
  if (seccomp_filtered() || unshare(CLONE_FILES) != 0) return false;
  close_all_but(keep);
  t_private_table = true;
  return true;
#endif
}

bool on_private_descriptor_table() { return t_private_table; }

void say_on_stderr(const std::string& line) {
  if (!t_private_table) {
    (void)!::write(2, line.data(), line.size());
    return;
  }
  // The program's descriptor 2 as it is now: a copy through a pidfd (any kind of file, a journal's
  // socket too), else opened again through /proc (ttys, pipes, files).
  int fd = -1;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd >= 0) {
    fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, 2, 0));
    ::close(pidfd);
  }
  if (fd < 0) fd = ::open("/proc/self/fd/2", O_WRONLY | O_NOCTTY | O_CLOEXEC | O_APPEND);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace inprof::internal
