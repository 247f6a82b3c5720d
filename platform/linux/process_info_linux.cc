#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "file_util_linux.h"
#include "owned_fd_linux.h"
#include "seccomp_state_linux.h"
#include "session/process_info.h"

namespace inprof::internal {

uint64_t process_id() { return static_cast<uint64_t>(getpid()); }
uint64_t current_thread_id() { return static_cast<uint64_t>(syscall(SYS_gettid)); }
uint64_t main_thread_id() { return process_id(); }
const char* os_name() { return "linux"; }

std::string executable_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::vector<std::string> command_line() {
  std::string raw;
  std::vector<std::string> args;
  if (!read_small_file("/proc/self/cmdline", &raw)) return args;
  size_t begin = 0;
  while (begin < raw.size()) {
    size_t end = raw.find('\0', begin);
    if (end == std::string::npos) end = raw.size();
    args.emplace_back(raw, begin, end - begin);
    begin = end + 1;
  }
  return args;
}

uint64_t current_thread_cpu_ns() {
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

uint64_t wall_clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Where process_vm_readv does not exist (qemu-user, kernels without CROSS_MEMORY_ATTACH): the
// kernel also validates the source of a write() to a pipe, failing with EFAULT instead of faulting.
// The two descriptors live for this call only and are checked before each use (owned_fd_linux.h):
// the program may close or replace any number at any moment.
static size_t read_memory_through_pipe(uint64_t address, void* out, size_t size) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return 0;
  FileIdentity pipe;
  const bool known = identity_of(fds[0], &pipe);
  auto ours = [&](int fd) {
    FileIdentity now;
    return known && identity_of(fd, &now) && now == pipe;
  };
  size_t done = 0;
  while (done < size && ours(fds[1])) {
    const size_t chunk = std::min<size_t>(size - done, 4096);  // below any pipe's capacity
    const ssize_t written = write(fds[1], reinterpret_cast<const void*>(address + done), chunk);
    if (written <= 0 || !ours(fds[0])) break;
    const ssize_t got = read(fds[0], static_cast<char*>(out) + done, static_cast<size_t>(written));
    if (got != written) break;
    done += static_cast<size_t>(got);
  }
  if (ours(fds[0])) close(fds[0]);
  if (ours(fds[1])) close(fds[1]);
  return done;
}

size_t read_memory(uint64_t address, void* out, size_t size) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  // Under a seccomp filter the call may be fatal (this thread's, asked now: a program thread
  // reading its own stack for an allocation sample too): a pipe's write() fails as cleanly on a
  // bad address.
  if (seccomp_filtered()) return read_memory_through_pipe(address, out, size);
  long n = syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
  if (n < 0 && errno == ENOSYS) return read_memory_through_pipe(address, out, size);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

int signal_number(const std::string& name) {
  if (name.rfind("RTMIN", 0) == 0 || name.rfind("RTMAX", 0) == 0) {
    const int base = name[3] == 'I' ? SIGRTMIN : SIGRTMAX;
    int offset = 0;
    if (name.size() > 5) {
      char* end;
      offset = static_cast<int>(std::strtol(name.c_str() + 5, &end, 10));
      if (*end != '\0') return 0;
    }
    const int sig = base + offset;
    return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : 0;
  }
  for (int sig = 1; sig < SIGRTMIN; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev && name == abbrev) return sig;
  }
  return 0;
}

void setup_profiler_thread(const char* name) {
  pthread_setname_np(pthread_self(), name);
  sigset_t all;
  sigfillset(&all);
  // Synchronous faults must still reach us (and crash loudly) rather than be blocked.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) sigdelset(&all, sig);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

void call_around_fork(void (*prepare)(), void (*parent)(), void (*child)()) {
  pthread_atfork(prepare, parent, child);
}

}  // namespace inprof::internal
