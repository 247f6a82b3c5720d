// Items 7 and 12: a program with its own alternate signal stack (the size given) crashes, by
// abort() or by a NULL write. Profiled with crash capture on, it must die exactly as unprofiled
// (same signal, same exit status) and the crash must be captured. With "own" it installs its
// own handler for the crash signal first (after the profiler armed its own): that handler must
// run; with "chain" that handler hands the signal on to the one it found, as crash reporters do.
//   crash_altstack SIZE|SIGSTKSZ abort|null [own|chain]
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct sigaction g_found = {};

void spin_for_ms(int ms) {
  timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  volatile unsigned long x = 0;
  do {
    for (int i = 0; i < 1000; ++i) x = x + i;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

void say(const char* text) { (void)!write(1, text, strlen(text)); }

void own_handler(int) {
  say("own handler\n");
  _exit(3);
}

// Hands the signal to what was there before, the way crash reporters chain.
void chaining_handler(int signal, siginfo_t* info, void* context) {
  say("chaining handler\n");
  if (g_found.sa_flags & SA_SIGINFO) {
    g_found.sa_sigaction(signal, info, context);
  } else if (g_found.sa_handler != SIG_DFL && g_found.sa_handler != SIG_IGN) {
    g_found.sa_handler(signal);
  } else {
    sigaction(signal, &g_found, nullptr);
    if (info->si_code <= 0) raise(signal);
  }
}

// The alternate stack sits just above a PROT_NONE page: a handler that needs more stack than
// the program gave it faults there instead of silently writing over other memory.
void install_alternate_stack(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (size + page - 1) / page * page;
  void* base =
      mmap(nullptr, rounded + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED || mprotect(base, page, PROT_NONE) != 0) std::abort();
  stack_t ss = {};
  // Exactly `size` bytes, ending at the top of the mapping.
  ss.ss_sp = static_cast<char*>(base) + page + rounded - size;
  ss.ss_size = size;
  if (sigaltstack(&ss, nullptr) != 0) {
    say("sigaltstack failed\n");
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SIZE|SIGSTKSZ abort|null [own|chain]\n", argv[0]);
    return 2;
  }
  // glibc's SIGSTKSZ is sysconf(_SC_SIGSTKSZ): what the kernel says this CPU's frames need.
  const size_t size = std::strcmp(argv[1], "SIGSTKSZ") == 0 ? static_cast<size_t>(SIGSTKSZ)
                                                            : std::strtoul(argv[1], nullptr, 0);
  const bool null_write = std::strcmp(argv[2], "null") == 0;
  const char* handler = argc > 3 ? argv[3] : "";
  const int signal = null_write ? SIGSEGV : SIGABRT;
  install_alternate_stack(size);
  if (std::strcmp(handler, "own") == 0 || std::strcmp(handler, "chain") == 0) {
    struct sigaction action = {};
    if (handler[0] == 'o') {
      action.sa_handler = own_handler;
    } else {
      action.sa_sigaction = chaining_handler;
      action.sa_flags = SA_SIGINFO;
    }
    action.sa_flags |= SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, &g_found);
  }
  spin_for_ms(100);  // so that the ring holds samples of this thread
  say("crashing\n");
  if (null_write) {
    *static_cast<volatile int*>(nullptr) = 1;
  } else {
    std::abort();
  }
  say("survived\n");
  return 0;
}
