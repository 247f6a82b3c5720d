#include "pprof/gzip.h"

#include <libdeflate.h>

#include <memory>
#include <mutex>
#include <new>

namespace inprof::internal {
namespace {

void* allocate(size_t bytes) { return ::operator new(bytes, std::nothrow); }
void release(void* block) { ::operator delete(block); }

struct CompressorDeleter {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

}  // namespace

std::string gzip(std::string_view bytes) {
  static std::once_flag allocator_set;
  std::call_once(allocator_set, [] { libdeflate_set_memory_allocator(allocate, release); });
  // Level 1: a scrape's profile is small, and the service's CPU is what matters.
  std::unique_ptr<libdeflate_compressor, CompressorDeleter> c(libdeflate_alloc_compressor(1));
  if (!c) return {};
  std::string out(libdeflate_gzip_compress_bound(c.get(), bytes.size()), '\0');
  const size_t n =
      libdeflate_gzip_compress(c.get(), bytes.data(), bytes.size(), out.data(), out.size());
  out.resize(n);
  return out;
}

}  // namespace inprof::internal
