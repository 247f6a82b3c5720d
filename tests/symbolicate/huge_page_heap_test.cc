// huge_page_heap.h: malloc's main heap and a worker thread's arena advised for transparent huge
// pages from within the process (no restart with glibc's tunable).
#include "symbolize/huge_page_heap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

using inprof::symbolicate::advise_this_threads_heap;
using inprof::symbolicate::prepare_huge_page_heap;

bool huge_pages_on() {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  return thp && mode.find("[never]") == std::string::npos;
}

// The VmFlags line of the mapping that holds `p` (/proc/self/smaps); empty if none does.
std::string vm_flags_at(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t low, high;
    char dash;
    std::istringstream range(line);
    if (line.find("VmFlags:") == 0) {
      if (inside) return line;
    } else if (range >> std::hex >> low >> dash >> high && dash == '-' &&
               line.find(':') > line.find(' ')) {
      inside = at >= low && at < high;
    }
  }
  return {};
}

TEST(HugePageHeap, MainHeapAndAWorkersArenaAreAdvised) {
#if defined(__SANITIZE_ADDRESS__) || defined(INPROF_ASAN) || defined(__SANITIZE_THREAD__) || \
    defined(INPROF_TSAN)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc's: no heap is advised";
#endif
  if (!huge_pages_on()) GTEST_SKIP() << "transparent huge pages are off: no advice given";
  prepare_huge_page_heap();
  // Too large for any free chunk: from the top of the main heap, grown and advised.
  void* main_block = std::malloc(size_t{1} << 20);
  ASSERT_NE(main_block, nullptr);
  EXPECT_NE(vm_flags_at(main_block).find(" hg"), std::string::npos) << vm_flags_at(main_block);
  std::free(main_block);
  std::string worker_flags;
  std::thread([&] {
    advise_this_threads_heap();
    void* block = std::malloc(size_t{1} << 20);  // from this thread's arena
    worker_flags = vm_flags_at(block);
    std::free(block);
  }).join();
  EXPECT_NE(worker_flags.find(" hg"), std::string::npos) << worker_flags;
}

}  // namespace
