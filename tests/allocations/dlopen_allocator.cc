// A library for allocation_scenarios to dlopen: its constructor allocates under the loader's
// lock, and keeps one block (it is never freed).
#include <cstdlib>

namespace {

void* g_kept = nullptr;

__attribute__((noinline)) void dlopen_constructor_site() {
  for (int i = 0; i < 100; ++i) std::free(std::malloc(1000 + i));
  g_kept = std::malloc(12345);
}

__attribute__((constructor)) void on_load() { dlopen_constructor_site(); }

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlopen_constructor_kept() { return g_kept; }
