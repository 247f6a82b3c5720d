// A counting allocator for the whole test binary: every malloc-family call (and so every
// operator new, which calls malloc) made by a thread while it has counting switched on is
// counted. Defined in counting_allocator.cc, which interposes glibc's malloc.
#ifndef INPROF_TESTS_PERF_COUNTING_ALLOCATOR_H_
#define INPROF_TESTS_PERF_COUNTING_ALLOCATOR_H_

#include <cstdint>

namespace inprof::testing {

// Counts the calling thread's allocations from construction to destruction.
class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  uint64_t count() const;

 private:
  uint64_t start_;
};

}  // namespace inprof::testing

#endif  // INPROF_TESTS_PERF_COUNTING_ALLOCATOR_H_
