#include "parallel_symbolizer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace inprof::symbolicate {
namespace {

struct Chunk {
  size_t module;
  size_t begin, end;
};

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
  // Each run of addresses is worked on by one thread with its own libdw handle. libdw 0.188
  // (Debian 12) cannot share a handle between threads, and every handle decompresses the debug
  // sections and parses the units it meets again (~85 MB and 0.1-0.25 s of CPU for python3.11),
  // so a module is split only when each part has many addresses; distinct modules run in
  // parallel. Contiguous runs: a handle mostly meets units no other handle parses.
  std::vector<Chunk> chunks;
  for (size_t m = 0; m < modules.size(); ++m) {
    size_t n = modules[m].vaddrs.size();
    size_t parts =
        std::clamp<size_t>(n / std::max<size_t>(min_addresses_per_handle, 1), 1, threads);
    size_t run = n / parts + 1;
    for (size_t b = 0; b < n; b += run) chunks.push_back({m, b, std::min(n, b + run)});
  }
  // The biggest first, so that a large module does not start last.
  std::stable_sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) {
    return a.end - a.begin > b.end - b.begin;
  });
  std::atomic<size_t> next_chunk{0}, finished{0};
  std::mutex mutex;
  std::condition_variable all_done;
  unsigned running = 0;

  auto work = [&] {
    std::map<size_t, std::unique_ptr<ModuleSymbolizer>> open;  // this thread's handles
    std::map<size_t, bool> failed;
    for (;;) {
      size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks.size()) break;
      const Chunk& chunk = chunks[c];
      ModuleAddresses& m = modules[chunk.module];
      auto it = open.find(chunk.module);
      if (it == open.end() && !failed[chunk.module]) {
        std::string why;
        auto symbolizer = ModuleSymbolizer::open(m.files, &why);
        if (symbolizer) {
          it = open.emplace(chunk.module, std::move(symbolizer)).first;
        } else {
          failed[chunk.module] = true;  // left undone: the caller resolves them itself
        }
      }
      if (it != open.end()) {
        for (size_t i = chunk.begin; i < chunk.end; ++i) {
          m.results[i] = it->second->symbolize(m.vaddrs[i]);
          m.done[i] = 1;
        }
      }
      finished.fetch_add(chunk.end - chunk.begin, std::memory_order_relaxed);
    }
  };

  if (threads == 1 || chunks.size() <= 1) {
    work();
    if (progress) progress(total, total);
    return;
  }
  std::vector<std::thread> pool;
  running = threads;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      work();
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
