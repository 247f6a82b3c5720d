// Threads from /proc/self/task (a descriptor for the listing only: between two listings the
// program's descriptor table holds nothing of ours), CPU time from the per-thread CPU clock.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "file_util_linux.h"
#include "owned_fd_linux.h"
#include "sampling/thread_lister.h"
#include "seccomp_state_linux.h"
#include "thread_activity_linux.h"
#include "thread_proc_linux.h"

namespace inprof::internal {
namespace {

class LinuxThreadLister final : public ThreadLister {
 public:
  bool list(std::vector<uint64_t>& tids) override {
    tids.clear();
    // The sampler lists threads every tick: the moment to notice a seccomp filter applied to
    // every thread (TSYNC) before its next memory copy (seccomp_state_linux.h).
    (void)seccomp_filtered();
    OwnedFd task("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (!task.is_open()) return false;
    alignas(8) char buf[8192];
    for (;;) {
      // Checked before each call: the program may have closed the number and reused it.
      const int fd = task.checked_fd();
      if (fd < 0) return false;
      long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
      if (n < 0) return false;
      if (n == 0) break;
      for (long pos = 0; pos < n;) {
        auto* entry = reinterpret_cast<LinuxDirent64*>(buf + pos);
        pos += entry->d_reclen;
        char* end;
        unsigned long tid = std::strtoul(entry->d_name, &end, 10);
        if (end != entry->d_name && *end == '\0') tids.push_back(tid);
      }
    }
    return true;
  }

  // The task directory's link count once it agreed with /proc/self/status's "Threads:" (not
  // on a kernel that counts links otherwise, or an emulator's /proc: asked a few times, as a
  // thread may start between the two), else that line (kept by the kernel as a count: ~17 µs
  // whatever the number, where listing a thousand threads takes hundreds; /proc/self/stat's
  // num_threads costs as many threads, their CPU times summed over them).
  std::optional<uint64_t> thread_count() override {
    if (links_trusted_) {
      if (const std::optional<uint64_t> by_links = thread_count_by_links()) return by_links;
    }
    const std::optional<uint64_t> by_status = status_thread_count();
    if (!links_trusted_ && link_comparisons_ < kLinkComparisons) {
      ++link_comparisons_;
      const std::optional<uint64_t> by_links = thread_count_by_links();
      links_trusted_ = by_links && by_status && *by_links == *by_status;
    }
    return by_status;
  }

  std::optional<uint64_t> status_thread_count() {
    char text[4096];
    const ssize_t n = read_small_file("/proc/self/status", text, sizeof(text) - 1);
    if (n <= 0) return std::nullopt;
    text[n] = '\0';
    const char* line = std::strstr(text, "\nThreads:");
    if (line == nullptr) return std::nullopt;
    char* end;
    const unsigned long long count = std::strtoull(line + 9, &end, 10);
    if (end == line + 9) return std::nullopt;
    return count;
  }

  std::optional<uint64_t> cpu_time_ns(uint64_t tid) override {
    return clock_ns(thread_cpu_clock(tid));
  }

  std::optional<uint64_t> process_cpu_time_ns() override {
    return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  }

  std::string name(uint64_t tid) override {
    // Read into a local buffer: a comm is at most 15 bytes, so the string returned fits its
    // inline storage and the periodic name refresh allocates nothing.
    char comm[64];
    const ssize_t n = read_task_file(tid, "comm", comm, sizeof(comm));
    if (n <= 0) return {};
    size_t length = static_cast<size_t>(n);
    while (length > 0 && comm[length - 1] == '\n') --length;
    return std::string(comm, length);
  }

  // Updated when the thread is switched in, so it lags by up to a scheduler tick.
  std::optional<uint64_t> cpu_wait_ns(uint64_t tid) override {
    return read_thread_cpu_wait_ns(tid);
  }

  std::optional<bool> asleep(uint64_t tid) override {
    const std::optional<char> state = read_thread_state(tid);
    if (!state) return std::nullopt;
    return *state != 'R';
  }

  std::optional<bool> ended(uint64_t tid) override {
    const std::optional<char> state = read_thread_state(tid);
    if (!state) return std::nullopt;
    return *state == 'Z' || *state == 'X';
  }

  void forget(uint64_t) override {}

  bool watch_activity(uint64_t starter) override { return activity_.open(starter); }

  void drain_activity(void (*deliver)(void*, const Activity&), void* context) override {
    activity_.drain(deliver, context);
  }

 private:
  static constexpr int kLinkComparisons = 4;
  static std::optional<uint64_t> clock_ns(clockid_t clock) {
    timespec ts;
    if (clock_gettime(clock, &ts) != 0) return std::nullopt;
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
  }

  ThreadActivityLinux activity_;
  bool links_trusted_ = false;  // thread_count()
  int link_comparisons_ = 0;
};

}  // namespace

std::unique_ptr<ThreadLister> ThreadLister::create() {
  return std::make_unique<LinuxThreadLister>();
}

}  // namespace inprof::internal
