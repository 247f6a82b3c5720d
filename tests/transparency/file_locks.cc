// A program holding POSIX record locks (fcntl F_SETLK) on the files of its own modules (the
// executable and libc) keeps them while profiled. Closing *any* descriptor of a file drops every
// such lock the process holds on it, so a profiler that opened a module's file to read its unwind
// tables and closed it again would silently unlock the program. The samples here unwind through
// both modules (qsort in libc calling back into the executable).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "transparency.h"

namespace {

volatile int g_order = 1;

__attribute__((noinline)) int compare(const void* a, const void* b) {
  const int x = *static_cast<const int*>(a), y = *static_cast<const int*>(b);
  return g_order * ((x > y) - (x < y));
}

// Sorts in libc (qsort) with a comparator here for about `ms` of CPU time.
void sort_for(uint64_t ms) {
  static int values[4096];
  const uint64_t until = transparency::thread_cpu_ns() + ms * 1000000;
  unsigned seed = 1;
  while (transparency::thread_cpu_ns() < until) {
    for (int& v : values) v = static_cast<int>(seed = seed * 1103515245u + 12345u);
    qsort(values, sizeof(values) / sizeof(values[0]), sizeof(values[0]), compare);
    g_order = -g_order;
  }
}

bool lock(int fd) {
  struct flock l {};
  l.l_type = F_RDLCK;
  l.l_whence = SEEK_SET;
  return fcntl(fd, F_SETLK, &l) == 0;
}

// In a child (locks are per process): whether someone else holds a lock on all of `path`.
bool locked_by_parent(const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    _exit(fd >= 0 && fcntl(fd, F_GETLK, &l) == 0 && l.l_type != F_UNLCK ? 0 : 1);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

}  // namespace

int main() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  Dl_info libc{};
  if (n <= 0 || dladdr(reinterpret_cast<void*>(&qsort), &libc) == 0) return 2;
  exe[n] = '\0';
  const std::string paths[] = {exe, libc.dli_fname};
  const char* names[] = {"executable", "libc"};
  for (const std::string& path : paths) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);  // kept open: the lock is its
    if (fd < 0 || !lock(fd)) return 3;
  }
  sort_for(400);
  for (int i = 0; i < 2; ++i) {
    std::printf("%s still locked: %s\n", names[i], locked_by_parent(paths[i]) ? "yes" : "no");
  }
  return 0;
}
