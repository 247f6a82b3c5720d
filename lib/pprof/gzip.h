// gzip of a whole buffer (pprof's served profiles are gzipped, as Go's are). libdeflate, linked
// into libinprof.so hidden, allocates through operator new: on the profiler's threads that is
// its own heap, never the program's malloc (memory/own_heap.h).
#ifndef INPROF_LIB_PPROF_GZIP_H_
#define INPROF_LIB_PPROF_GZIP_H_

#include <string>
#include <string_view>

namespace inprof::internal {

// `bytes` gzipped at a fast level; empty if out of memory.
std::string gzip(std::string_view bytes);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PPROF_GZIP_H_
