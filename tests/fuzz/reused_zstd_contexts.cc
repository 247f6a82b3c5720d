// Fuzzing speed, not coverage: the dump reader creates a zstd decompression context per call, and
// zstd allocates its window-sized streaming buffers (about 0.75 MB for the writer's frames) inside
// it at the first frame. Under ASan each such block is a fresh mmap, page faults on first touch
// and a shadow memset on free: perf showed about 80 % of fuzz_dump_reader's time there (45 % in
// the kernel, 36 % in memset), not in our parsing. These definitions take precedence over
// libzstd's for the code linked into a fuzz target, and hand out contexts kept from earlier
// inputs, reset to a new context's state (session and parameters), as a long-lived reader would.
// Several may be in use at once (a pool, not a single context).
#include <dlfcn.h>
#include <zstd.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace {

template <typename Function>
Function* libzstd_function(const char* name) {
  void* found = dlsym(RTLD_NEXT, name);
  if (found == nullptr) std::abort();  // libzstd is linked in: cannot happen
  return reinterpret_cast<Function*>(found);
}

std::mutex pool_mutex;
std::vector<ZSTD_DCtx*>& idle_contexts() {
  static auto* pool = new std::vector<ZSTD_DCtx*>;  // never destroyed: used until exit
  return *pool;
}

}  // namespace

extern "C" ZSTD_DCtx* ZSTD_createDCtx(void) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    auto& idle = idle_contexts();
    if (!idle.empty()) {
      ZSTD_DCtx* reused = idle.back();
      idle.pop_back();
      return reused;
    }
  }
  static auto* create = libzstd_function<ZSTD_DCtx*()>("ZSTD_createDCtx");
  return create();
}

extern "C" size_t ZSTD_freeDCtx(ZSTD_DCtx* context) {
  if (context == nullptr) return 0;
  ZSTD_DCtx_reset(context, ZSTD_reset_session_and_parameters);
  std::lock_guard<std::mutex> lock(pool_mutex);
  idle_contexts().push_back(context);
  return 0;
}
