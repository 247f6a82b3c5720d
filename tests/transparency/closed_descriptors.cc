// Item (issue 39): descriptors the program closes are no longer the profiler's. Like a daemon
// that tidies up at start, the program closes every descriptor above 2 (close_range(3, ~0U)),
// then opens two files of its own (they take 3 and 4, numbers a profiler may have held) and
// writes known lines into each for ~500 ms while four threads compute (sampled). Reading both
// back through new descriptors, each must hold exactly the lines written: no dump chunk written
// into the program's fd 3, no offset of its fd 4 rewound by a profiler reading /proc through it.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

constexpr int kLines = 100;

std::string line(char which, int i) {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "file %c line %03d: the quick brown fox jumps over the dog\n",
                which, i);
  return buf;
}

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

std::string read_file(const char* path) {
  std::string out;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(cannot open)";
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, size_t(n));
  close(fd);
  return out;
}

}  // namespace

int main() {
  transparency::spin_cpu_ms(20);  // sampled before the descriptors go
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    std::printf("close_range failed\n");
    return 0;
  }
  const char* paths[2] = {"closed_descriptors.a", "closed_descriptors.b"};
  int fds[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }
  std::printf("the program's files took the lowest descriptors: %s\n",
              fds[0] == 3 && fds[1] == 4 ? "yes (3 and 4)" : "no");

  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int i = 0; i < 4; ++i) {
    busy.emplace_back([&] {
      while (!stop.load()) transparency::spin_cpu_ms(5);
    });
  }
  std::string expected[2];
  bool written = true;
  for (int i = 0; i < kLines; ++i) {  // ~500 ms: 5 ms of CPU per line
    transparency::spin_cpu_ms(5);
    for (int f = 0; f < 2; ++f) {
      const std::string l = line(char('a' + f), i);
      written = write_all(fds[f], l) && written;
      expected[f] += l;
    }
  }
  stop.store(true);
  for (auto& t : busy) t.join();
  for (int f = 0; f < 2; ++f) close(fds[f]);

  std::printf("every write succeeded: %s\n", written ? "yes" : "no");
  for (int f = 0; f < 2; ++f) {
    const std::string got = read_file(paths[f]);
    std::printf("%s holds exactly its %d lines: %s\n", paths[f], kLines,
                got == expected[f]                ? "yes"
                : got.size() > expected[f].size() ? "no (more bytes)"
                : got.size() < expected[f].size() ? "no (fewer bytes)"
                                                  : "no (other bytes)");
  }
  return 0;
}
