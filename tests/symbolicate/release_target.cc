// A small program for the release-build tests: they strip copies of it, move its DWARF into
// separate debug files and symbolicate its addresses through them. Run, it prints the ELF
// virtual addresses the tests need and the source lines they must resolve to:
//   leaf <vaddr of release_leaf> <its line>
//   inline_return <return address inside inlined code> <call line in the inlinee> <line in outer>
#include <link.h>

#include <cstdint>
#include <cstdio>

namespace {
volatile uintptr_t sink;
uintptr_t load_bias;

int first_object(dl_phdr_info* info, size_t, void*) {
  load_bias = info->dlpi_addr;  // the first object is the program itself
  return 1;
}
}  // namespace

__attribute__((noinline)) uintptr_t release_return_address() {
  uintptr_t r = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  sink = r;
  return r;
}

const int kLeafLine = __LINE__ + 1;
__attribute__((noinline)) int release_leaf(int x) {
  volatile int v = x;
  return v * 7 + 1;
}

const int kHelperCallLine = __LINE__ + 2;
__attribute__((always_inline)) inline uintptr_t release_inlined_helper() {
  uintptr_t r = release_return_address();
  sink = r;
  return r;
}

const int kOuterLine = __LINE__ + 2;
__attribute__((noinline)) uintptr_t release_outer() {
  uintptr_t r = release_inlined_helper();
  sink = r + 1;
  return r;
}

int main() {
  dl_iterate_phdr(first_object, nullptr);
  sink = static_cast<uintptr_t>(release_leaf(3));
  uintptr_t ra = release_outer();
  std::printf("leaf %#lx %d\n",
              static_cast<unsigned long>(reinterpret_cast<uintptr_t>(&release_leaf) - load_bias),
              kLeafLine);
  std::printf("inline_return %#lx %d %d\n", static_cast<unsigned long>(ra - load_bias),
              kHelperCallLine, kOuterLine);
  return 0;
}
