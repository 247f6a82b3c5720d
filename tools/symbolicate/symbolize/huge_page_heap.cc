#include "symbolize/huge_page_heap.h"

#include <cstdint>  // and __GLIBC__ with it

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

namespace inprof::symbolicate {

// Under a sanitizer malloc is the sanitizer's, not glibc's: no main heap or arenas to advise.
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(INPROF_ASAN) && \
    !defined(__SANITIZE_THREAD__) && !defined(INPROF_TSAN)
namespace {

// The main heap grown ahead and advised: a short-lived tool's tables (libdw's, the profile's)
// fit in it, on huge pages. Address space only: pages are backed as they are touched.
constexpr size_t kMainHeapAhead = size_t{512} << 20;
// How much malloc grows the main heap by otherwise.
constexpr int kTopPad = 64 << 20;
// glibc's size and alignment of a thread arena's heap on 64-bit (HEAP_MAX_SIZE, 2 x the
// largest mmap threshold): the heap holding a pointer starts at the pointer rounded down to it.
constexpr uintptr_t kArenaHeapSize = uintptr_t{64} << 20;

std::atomic<bool> enabled{false};
uintptr_t main_heap_low = 0, main_heap_high = 0;  // the main heap's extent once grown

bool huge_pages_available() {
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  char mode[128] = {};
  const bool read = std::fgets(mode, sizeof mode, f) != nullptr;
  std::fclose(f);
  return read && !std::strstr(mode, "[never]");
}

// Whether address space and commit charge can spare kMainHeapAhead: not under a limit on them
// (ulimit -v, -d) nor strict overcommit, where the reserve would be taken from later needs
// (the heap is then grown and advised by the usual top pad only).
bool room_for_heap_ahead() {
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit;
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY) return false;
  }
  std::FILE* f = std::fopen("/proc/sys/vm/overcommit_memory", "r");
  if (!f) return true;
  const int mode = std::fgetc(f);
  std::fclose(f);
  return mode != '2';
}

}  // namespace

void prepare_huge_page_heap() {
  // A short-lived tool that builds and frees large tables (libdw's line tables, the profile's):
  // freed memory is kept for reuse rather than returned to the kernel and faulted in again
  // (5-10 % of the run on 50,000 python3.11 addresses).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // The user's own choice of glibc's huge-page tunable is glibc's to carry out.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (!huge_pages_available() || (tunables && std::strstr(tunables, "glibc.malloc.hugetlb"))) {
    mallopt(M_TOP_PAD, kTopPad);
    return;
  }
  // One allocation that does not fit the top of the heap makes malloc grow it by the top pad.
  const size_t ahead = room_for_heap_ahead() ? kMainHeapAhead : kTopPad;
  mallopt(M_TOP_PAD, static_cast<int>(ahead));
  const auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  void* grow = std::malloc(size_t{1} << 20);
  const auto after = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_TOP_PAD, kTopPad);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (grow && after > before + ahead / 2) {  // grown where expected, not mapped apart
    // From the old top of the heap, where `grow` was carved and what follows it will be.
    const uintptr_t low = reinterpret_cast<uintptr_t>(grow) & ~(page - 1);
    if (madvise(reinterpret_cast<void*>(low), after - low, MADV_HUGEPAGE) == 0) {
      main_heap_low = low;
      main_heap_high = after;
      enabled.store(true, std::memory_order_release);
    }
  }
  std::free(grow);
}

void advise_this_threads_heap() {
  if (!enabled.load(std::memory_order_acquire)) return;
  void* probe = std::malloc(64);  // from this thread's arena, created for it if need be
  if (!probe) return;
  const auto at = reinterpret_cast<uintptr_t>(probe);
  std::free(probe);
  // The main heap (advised; below main_heap_low only what was allocated before main): not an
  // arena's own. glibc maps those far from it, above the libraries.
  if (at + kArenaHeapSize > main_heap_low && at < main_heap_high) return;
  const uintptr_t heap = at & ~(kArenaHeapSize - 1);
  madvise(reinterpret_cast<void*>(heap), kArenaHeapSize, MADV_HUGEPAGE);  // advice: may fail
}
#else
void prepare_huge_page_heap() {}
void advise_this_threads_heap() {}
#endif

}  // namespace inprof::symbolicate
