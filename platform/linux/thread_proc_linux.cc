#include "thread_proc_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "owned_fd_linux.h"

namespace inprof::internal {
namespace {

// On a descriptor table of the thread's own, /proc/self/task stays open (the table is the
// thread's: nothing of the program's is held), and a thread's file is opened from there: two
// steps of path instead of five, for each of the files a burst of new threads has read. -1
// elsewhere (on the program's table nothing is held between two uses).
int task_directory() {
  __attribute__((tls_model("initial-exec"))) static thread_local int t_directory = -2;
  if (!on_private_descriptor_table()) return -1;
  if (t_directory == -2) {
    t_directory = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t_directory < 0) t_directory = -1;
  }
  return t_directory;
}

// /proc/self/task/TID/NAME, relative to task_directory() where it is open.
struct TaskFile {
  int directory;
  char path[64];
};

TaskFile task_file(uint64_t tid, const char* name) {
  TaskFile file;
  file.directory = task_directory();
  const auto id = static_cast<unsigned long long>(tid);
  if (file.directory >= 0) {
    std::snprintf(file.path, sizeof(file.path), "%llu/%s", id, name);
  } else {
    file.directory = AT_FDCWD;
    std::snprintf(file.path, sizeof(file.path), "/proc/self/task/%llu/%s", id, name);
  }
  return file;
}

// The value of "Key:\t..." in a status file, or null.
const char* field(const char* text, const char* key) {
  const size_t length = std::strlen(key);
  for (const char* line = text; line && *line;) {
    if (std::strncmp(line, key, length) == 0 && line[length] == ':') {
      const char* value = line + length + 1;
      while (*value == ' ' || *value == '\t') ++value;
      return value;
    }
    line = std::strchr(line, '\n');
    if (line) ++line;
  }
  return nullptr;
}

}  // namespace

std::optional<ThreadSignalState> read_thread_signal_state(uint64_t tid, int signal) {
  char text[4096];
  if (read_task_file(tid, "status", text, sizeof(text)) <= 0) return std::nullopt;
  const char* blocked = field(text, "SigBlk");
  if (blocked == nullptr || signal < 1 || signal > 64) return std::nullopt;
  ThreadSignalState state;
  // Hexadecimal, signal 1 in the lowest bit.
  const uint64_t mask = std::strtoull(blocked, nullptr, 16);
  state.blocks_signal = (mask >> (signal - 1)) & 1;
  if (const char* pending = field(text, "SigPnd")) {
    state.signal_pending = (std::strtoull(pending, nullptr, 16) >> (signal - 1)) & 1;
  }
  if (const char* seccomp = field(text, "Seccomp")) state.seccomp = *seccomp != '0';
  if (const char* switches = field(text, "voluntary_ctxt_switches")) {
    state.voluntary_switches = std::strtoull(switches, nullptr, 10);
  }
  return state;
}

std::optional<uint64_t> thread_count_by_links() {
  const int directory = task_directory();
  struct stat st;
  if (directory < 0 || ::fstat(directory, &st) != 0 || st.st_nlink < 3) return std::nullopt;
  return static_cast<uint64_t>(st.st_nlink) - 2;
}

ssize_t read_task_file(uint64_t tid, const char* name, char* buf, size_t size) {
  const TaskFile file = task_file(tid, name);
  return read_small_file_at(file.directory, file.path, buf, size);
}

namespace {

std::optional<ThreadSyscallState> parse_syscall_state(char* text) {
  ThreadSyscallState state;
  if (std::strncmp(text, "running", 7) == 0) {
    state.running = true;
    return state;
  }
  // "NR ARG1 ... ARG6 SP PC" in a system call, "-1 SP PC" outside one (preempted in user mode).
  char* p = text;
  char* end;
  state.number = std::strtoll(p, &end, 10);
  if (end == p) return std::nullopt;
  uint64_t words[8];
  int count = 0;
  for (p = end; count < 8; p = end) {
    words[count] = std::strtoull(p, &end, 16);
    if (end == p) break;
    ++count;
  }
  if (count < 2) return std::nullopt;
  state.in_syscall = state.number >= 0;
  if (state.in_syscall && count == 8) state.first_argument = words[0];
  state.sp = words[count - 2];
  state.pc = words[count - 1];
  return state;
}

}  // namespace

std::optional<ThreadSyscallState> read_thread_syscall_state(uint64_t tid) {
  char text[256];
  if (read_task_file(tid, "syscall", text, sizeof(text)) <= 0) return std::nullopt;
  return parse_syscall_state(text);
}

bool syscall_swaps_signal_mask(int64_t number) {
  // Those an architecture lacks are not defined there.
  static constexpr int64_t kSwapping[] = {
#ifdef SYS_rt_sigtimedwait
      SYS_rt_sigtimedwait,
#endif
#ifdef SYS_rt_sigtimedwait_time64
      SYS_rt_sigtimedwait_time64,
#endif
#ifdef SYS_rt_sigsuspend
      SYS_rt_sigsuspend,
#endif
#ifdef SYS_sigsuspend
      SYS_sigsuspend,
#endif
#ifdef SYS_pselect6
      SYS_pselect6,
#endif
#ifdef SYS_pselect6_time64
      SYS_pselect6_time64,
#endif
#ifdef SYS_ppoll
      SYS_ppoll,
#endif
#ifdef SYS_ppoll_time64
      SYS_ppoll_time64,
#endif
#ifdef SYS_epoll_pwait
      SYS_epoll_pwait,
#endif
#ifdef SYS_epoll_pwait2
      SYS_epoll_pwait2,
#endif
#ifdef SYS_io_pgetevents
      SYS_io_pgetevents,
#endif
#ifdef SYS_io_pgetevents_time64
      SYS_io_pgetevents_time64,
#endif
#ifdef SYS_io_uring_enter
      SYS_io_uring_enter,
#endif
  };
  for (const int64_t swapping : kSwapping) {
    if (number == swapping) return true;
  }
  return false;
}

ThreadSyscallFile::ThreadSyscallFile(uint64_t tid) {
  const TaskFile file = task_file(tid, "syscall");
  file_ = OwnedFd(file.directory, file.path, O_RDONLY);
}

std::optional<ThreadSyscallState> ThreadSyscallFile::read() {
  char text[256];
  // One record, given whole to a read large enough (as read_small_file).
  const ssize_t n = file_.pread(text, sizeof(text) - 1, 0);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  return parse_syscall_state(text);
}

std::optional<char> read_thread_state(uint64_t tid) {
  char text[512];
  if (read_task_file(tid, "stat", text, sizeof(text)) <= 0) return std::nullopt;
  // "TID (COMM) STATE ...": the name may hold spaces and parentheses, so after the last ')'.
  const char* close = std::strrchr(text, ')');
  if (close == nullptr || close[1] != ' ' || close[2] == '\0') return std::nullopt;
  return close[2];
}

std::optional<uint64_t> read_thread_cpu_wait_ns(uint64_t tid) {
  char text[128];
  if (read_task_file(tid, "schedstat", text, sizeof(text)) <= 0) return std::nullopt;
  char* end;
  std::strtoull(text, &end, 10);  // run time
  if (end == text) return std::nullopt;
  const char* wait = end;
  const uint64_t value = std::strtoull(wait, &end, 10);
  if (end == wait) return std::nullopt;
  return value;
}

}  // namespace inprof::internal
