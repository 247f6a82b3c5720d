// prepare_for_handles (module_symbolizer.h): the debug images every handle of a module shares,
// taken from the symbol cache when an earlier run kept one, else inflated here on every thread,
// the largest sections first, and kept for the next run.
#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "symbolize/elf/debug_image.h"
#include "symbolize/elf/debug_image_cache.h"
#include "symbolize/huge_page_heap.h"
#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {
namespace {

// The debug images being written to the cache, a thread each; joined by
// wait_for_debug_image_saves(), or at the latest when the process exits. An image asked for
// again meanwhile (the same debug file in another dump of the run) is waited for, then read.
class PendingSaves {
 public:
  ~PendingSaves() { wait(); }
  void add(std::shared_ptr<const DebugImage> image, std::string path) {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      saves_.push_back({path, std::thread([image, path] { save_debug_image(*image, path); })});
    } catch (const std::system_error&) {  // no thread to be had: written here and now
      save_debug_image(*image, path);
    }
  }
  // Every save, or only those to `path`.
  void wait(const std::string* path = nullptr) {
    std::vector<Save> done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto keep = std::stable_partition(saves_.begin(), saves_.end(),
                                        [&](const Save& s) { return path && s.path != *path; });
      std::move(keep, saves_.end(), std::back_inserter(done));
      saves_.erase(keep, saves_.end());
    }
    for (Save& s : done) s.thread.join();
  }

 private:
  struct Save {
    std::string path;
    std::thread thread;
  };
  std::mutex mutex_;
  std::vector<Save> saves_;
};

PendingSaves& pending_saves() {
  static PendingSaves saves;
  return saves;
}

}  // namespace

void wait_for_debug_image_saves() { pending_saves().wait(); }

void prepare_for_handles(const std::vector<ModuleFiles*>& files, unsigned threads) {
  struct Job {
    DebugImage* image;
    size_t task;
  };
  std::vector<std::unique_ptr<DebugImage>> images(files.size());
  std::vector<Job> jobs;
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i]->debug.empty() || files[i]->debug_image || files[i]->macho) continue;
    if (!files[i]->image_cache.empty()) {  // inflated by an earlier run
      pending_saves().wait(&files[i]->image_cache);
      files[i]->debug_image = load_cached_debug_image(files[i]->image_cache, files[i]->debug);
      if (files[i]->debug_image) continue;
    }
    std::string why;
    images[i] = DebugImage::plan(files[i]->debug, &why);
    if (!images[i]) continue;  // nothing to gain, or the handles will say what is wrong
    for (size_t t = 0; t < images[i]->task_count(); ++t) jobs.push_back({images[i].get(), t});
  }
  // The largest sections first, whichever file they are in: the last to finish is then small.
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    return a.image->task_bytes(a.task) > b.image->task_bytes(b.task);
  });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next.fetch_add(1, std::memory_order_relaxed)) < jobs.size();) {
      jobs[j].image->run_task(jobs[j].task);
    }
  };
  std::vector<std::thread> helpers;
  const size_t extra = std::min<size_t>(std::max(threads, 1u), jobs.size());
  for (size_t t = 1; t < extra; ++t) {
    helpers.emplace_back([&] {
      advise_this_threads_heap();
      work();
    });
  }
  work();
  for (std::thread& t : helpers) t.join();
  for (size_t i = 0; i < files.size(); ++i) {
    std::string why;
    if (!images[i] || !images[i]->finish(&why)) continue;
    std::shared_ptr<const DebugImage> image = std::move(images[i]);
    if (!files[i]->image_cache.empty()) pending_saves().add(image, files[i]->image_cache);
    files[i]->debug_image = std::move(image);
  }
}

}  // namespace inprof::symbolicate
