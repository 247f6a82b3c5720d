// Item (issue 39): POSIX record locks on the program's own modules stay held. Such a lock belongs
// to the process and goes away when the process closes ANY descriptor of the file: a profiler
// that opens the executable or a library to read its unwind tables or symbols, and closes it,
// silently drops the program's lock. The program takes a read lock (F_SETLK, F_RDLCK) on its
// executable (/proc/self/exe) and on libc (dladdr of qsort), computes for ~500 ms in threads whose
// stacks go through both (libc's qsort calling back into the program), then forks a child that
// opens each file itself and asks with F_GETLK whether a write lock would conflict: it must,
// with the parent's lock.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

int compare_slowly(const void* a, const void* b) {
  transparency::spin_cpu_us(20);  // sampled in here: libc's qsort below, this program above
  const int x = *static_cast<const int*>(a), y = *static_cast<const int*>(b);
  return (x > y) - (x < y);
}

bool read_lock(int fd) {
  struct flock fl = {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  return fcntl(fd, F_SETLK, &fl) == 0;
}

// In the child: whether `path`, opened anew, has a lock of `owner` that a write lock would meet.
bool held_by(const std::string& path, pid_t owner) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl = {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const bool held = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_RDLCK && fl.l_pid == owner;
  close(fd);
  return held;
}

}  // namespace

int main() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return 2;
  exe[n] = 0;
  Dl_info info = {};
  if (dladdr(reinterpret_cast<void*>(&qsort), &info) == 0 || info.dli_fname == nullptr) return 2;
  const std::string paths[2] = {exe, info.dli_fname};
  const char* names[2] = {"executable", "libc"};
  int fds[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    std::printf("%s: read lock taken: %s\n", names[i],
                fds[i] >= 0 && read_lock(fds[i]) ? "yes" : "no");
  }

  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int i = 0; i < 3; ++i) {
    busy.emplace_back([&, i] {
      std::vector<int> values(64);
      while (!stop.load()) {
        for (size_t j = 0; j < values.size(); ++j) values[j] = int((j * 7919 + size_t(i)) % 1000);
        qsort(values.data(), values.size(), sizeof(int), compare_slowly);
      }
    });
  }
  transparency::spin_cpu_ms(500);
  stop.store(true);
  for (auto& t : busy) t.join();

  std::fflush(stdout);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    int bits = 0;
    for (int i = 0; i < 2; ++i) bits |= held_by(paths[i], parent) ? 1 << i : 0;
    _exit(bits);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 2;
  for (int i = 0; i < 2; ++i) {
    std::printf("%s: the program's read lock still held (seen from a child): %s\n", names[i],
                WEXITSTATUS(status) & (1 << i) ? "yes" : "no");
  }
  return 0;
}
