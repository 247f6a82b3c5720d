#include "symbolize/parallel_symbolizer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "symbolize/huge_page_heap.h"

namespace inprof::symbolicate {
namespace {

// A piece of work: the addresses order[begin, end) of one module, whole units only.
struct Chunk {
  size_t module;
  size_t begin, end;
};

// What the threads share about one module.
struct ModuleWork {
  std::vector<uint32_t> order;  // indices of its addresses, grouped by unit
  std::mutex mutex;
  // The handle that grouped the addresses, for the first thread to need one; or the failure to
  // open any (then no thread tries again: the caller resolves what is left undone).
  std::unique_ptr<ModuleSymbolizer> spare;
  bool unusable = false;
};

// Splits module `m`'s addresses into chunks of whole units (compilation units) for `threads`
// threads: each unit is then parsed by one handle only. Units are not contiguous in the address
// space (an LTO build interleaves them all), so runs of neighbouring addresses would not do.
void split_by_unit(ModuleAddresses& addresses, size_t m, unsigned threads, ModuleWork& work,
                   std::vector<Chunk>& chunks) {
  const size_t n = addresses.vaddrs.size();
  std::string why;
  work.spare = ModuleSymbolizer::open(addresses.files, &why);
  if (work.spare) {
    work.spare->use_known_units(addresses.known_units);
    work.spare->use_known_symbols(addresses.known_symbols);
  }
  if (!work.spare) {
    work.unusable = true;
    chunks.push_back({m, 0, n});
    return;
  }
  std::vector<uint64_t> unit(n);
  for (size_t i = 0; i < n; ++i) unit[i] = work.spare->unit_of(addresses.vaddrs[i]);
  std::stable_sort(work.order.begin(), work.order.end(),
                   [&](uint32_t a, uint32_t b) { return unit[a] < unit[b]; });
  // Many chunks per thread, so that the last ones to finish are small (with 4, the threads
  // finished up to 25 ms apart on python3.11; with 16, within 2 ms).
  const size_t target = std::max<size_t>(n / (size_t(threads) * 16), 1);
  size_t begin = 0;
  for (size_t k = 0; k < n;) {
    const uint64_t u = unit[work.order[k]];
    while (k < n && unit[work.order[k]] == u) ++k;
    if (k - begin >= target || k == n) {
      chunks.push_back({m, begin, k});
      begin = k;
    }
  }
}

}  // namespace

unsigned effective_jobs(unsigned jobs) {
  if (!kSymbolizersRunInParallel) return 1;
  if (jobs) return jobs;
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

void symbolize_in_parallel(std::vector<ModuleAddresses>& modules, unsigned jobs,
                           const std::function<void(size_t, size_t)>& progress,
                           size_t min_addresses_per_handle) {
  const unsigned threads = effective_jobs(jobs);
  size_t total = 0;
  for (ModuleAddresses& m : modules) {
    m.results.assign(m.vaddrs.size(), AddressSymbol{});
    m.done.assign(m.vaddrs.size(), 0);
    total += m.vaddrs.size();
  }
  // libdw 0.188 (Debian 12) cannot share a handle between threads: each thread opens its own for
  // the modules it works on, and parses the units it meets. Their compressed debug sections are
  // inflated once beforehand, on every thread, for all handles. A module with many addresses is
  // split between threads by compilation unit; distinct modules run in parallel.
  {
    std::vector<ModuleFiles*> files;
    for (ModuleAddresses& m : modules) files.push_back(&m.files);
    prepare_for_handles(files, threads);
  }
  std::vector<ModuleWork> work(modules.size());
  std::vector<Chunk> chunks;
  for (size_t m = 0; m < modules.size(); ++m) {
    const size_t n = modules[m].vaddrs.size();
    work[m].order.resize(n);
    for (size_t i = 0; i < n; ++i) work[m].order[i] = static_cast<uint32_t>(i);
    if (threads > 1 && n >= std::max<size_t>(min_addresses_per_handle, 2)) {
      split_by_unit(modules[m], m, threads, work[m], chunks);
    } else if (n > 0) {
      chunks.push_back({m, 0, n});
    }
  }
  // The biggest first, so that a large piece does not start last.
  std::stable_sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) {
    return a.end - a.begin > b.end - b.begin;
  });
  std::atomic<size_t> next_chunk{0}, finished{0};
  std::mutex mutex;
  std::condition_variable all_done;
  unsigned running = 0;

  auto run = [&] {
    std::map<size_t, std::unique_ptr<ModuleSymbolizer>> open;  // this thread's handles
    for (;;) {
      size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks.size()) break;
      const Chunk& chunk = chunks[c];
      ModuleAddresses& m = modules[chunk.module];
      auto it = open.find(chunk.module);
      if (it == open.end()) {
        ModuleWork& w = work[chunk.module];
        std::unique_ptr<ModuleSymbolizer> handle;
        bool unusable;
        {
          std::lock_guard<std::mutex> lock(w.mutex);
          handle = std::move(w.spare);
          unusable = w.unusable;
        }
        if (!handle && !unusable) {
          std::string why;
          handle = ModuleSymbolizer::open(m.files, &why);  // null: left undone, see above
          if (handle) {
            handle->use_known_units(m.known_units);
            handle->use_known_symbols(m.known_symbols);
          }
        }
        it = open.emplace(chunk.module, std::move(handle)).first;
      }
      if (ModuleSymbolizer* symbolizer = it->second.get()) {
        const std::vector<uint32_t>& order = work[chunk.module].order;
        for (size_t k = chunk.begin; k < chunk.end; ++k) {
          const uint32_t i = order[k];
          m.results[i] = symbolizer->symbolize(m.vaddrs[i]);
          m.done[i] = 1;
        }
      }
      finished.fetch_add(chunk.end - chunk.begin, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [module, handle] : open) {
      if (handle) modules[module].handles.push_back(std::move(handle));
    }
  };

  if (threads == 1 || chunks.size() <= 1) {
    run();
    if (progress) progress(total, total);
    return;
  }
  std::vector<std::thread> pool;
  running = threads;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      advise_this_threads_heap();
      run();
      std::lock_guard<std::mutex> lock(mutex);
      if (--running == 0) all_done.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (running > 0) {
      all_done.wait_for(lock, std::chrono::milliseconds(200));
      if (progress) progress(finished.load(std::memory_order_relaxed), total);
    }
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace inprof::symbolicate
