// Item (issue 39): a seccomp filter the program installs is obeyed by everything in it. Before
// starting any thread, main sets PR_SET_NO_NEW_PRIVS and installs, for all its threads
// (SECCOMP_FILTER_FLAG_TSYNC: the profiler's threads included), a filter that kills the process
// on perf_event_open and process_vm_readv and fails ppoll with EPERM; then two threads compute
// and one sleeps for ~500 ms. A profiler that opens kernel rings for the busy threads, or copies
// stacks with process_vm_readv, gets the program killed (SIGSYS): it must see the filter coming.
//   --exec-child: the filter is installed (this thread only) and the program execs itself with
//   --filtered: the image that runs the work, and the profiler in it, start under the filter.
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "seccomp_filter: unknown architecture"
#endif

// Returns 0, errno of prctl/seccomp(2), or -1 when TSYNC could not bring every thread along.
int install_filter(unsigned flags) {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ppoll, 2, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
  };
  sock_fprog prog = {static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  const long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (r < 0) return errno;
  return r == 0 ? 0 : -1;  // TSYNC: r is the thread that could not be synchronized
}

int work() {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      while (!stop.load()) transparency::spin_cpu_ms(5);
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  transparency::spin_cpu_ms(500);
  stop.store(true);
  for (auto& t : threads) t.join();
  // The filter is there, and the program's own ppoll is refused as it asked.
  timespec zero{0, 0};
  const long r = syscall(SYS_ppoll, nullptr, 0, &zero, nullptr, 8);
  std::printf("in filter mode: %s\n", prctl(PR_GET_SECCOMP) == 2 ? "yes" : "no");
  std::printf("ppoll: %s\n", r == -1 && errno == EPERM ? "EPERM, as filtered" : "not filtered");
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool exec_child = argc > 1 && std::strcmp(argv[1], "--exec-child") == 0;
  const bool filtered = argc > 1 && std::strcmp(argv[1], "--filtered") == 0;
  if (filtered) return work();  // the filter came with the exec
  if (const int err = install_filter(exec_child ? 0 : SECCOMP_FILTER_FLAG_TSYNC); err != 0) {
    // Visible as a difference: unprofiled, the filter always installs.
    std::printf("filter not installed\n");
    std::fprintf(stderr, "seccomp: %s\n", err < 0 ? "TSYNC failed" : std::strerror(err));
    return 0;
  }
  if (exec_child) {
    std::fflush(stdout);
    char self[] = "/proc/self/exe";
    char arg[] = "--filtered";
    char* child_argv[] = {self, arg, nullptr};
    execv(self, child_argv);
    std::printf("exec failed\n");
    return 0;
  }
  return work();
}
