// The interface between libinprof and the allocation interposer (libinprof_allocations, built
// from platform/<os>/allocation_hooks_<os>.cc). The interposer depends on nothing but the C
// library; the core finds its entry point by name when a session asks for allocations, and hands
// it a sink: where sampled allocations and frees of sampled blocks go. Plain C types: the two
// sides may be built apart, so the ABI version is checked.
#ifndef INPROF_LIB_ALLOCATIONS_ALLOCATION_SINK_H_
#define INPROF_LIB_ALLOCATIONS_ALLOCATION_SINK_H_

#include <cstdint>

extern "C" {

#define INPROF_ALLOCATIONS_ABI 1

// How a block was allocated.
enum InprofAllocationKind : uint8_t {
  kInprofAllocMalloc = 0,
  kInprofAllocCalloc = 1,
  kInprofAllocRealloc = 2,
  kInprofAllocAligned = 3,
  kInprofAllocNew = 4,
  kInprofAllocNewArray = 5,
};

struct InprofAllocationEvent {
  uint64_t address;
  uint64_t size;
  uint64_t weight;     // the bytes it stands for (sampling.h)
  uint64_t caller_pc;  // the return address into the code that called the allocator
  uint64_t tid;
  uint8_t kind;  // InprofAllocationKind
};

struct InprofAllocationSink {
  uint32_t abi;            // INPROF_ALLOCATIONS_ABI
  uint64_t sample_bytes;   // mean bytes between samples; 1: every allocation
  uint64_t tracked_slots;  // capacity of the set of large sampled blocks (a power of two)
  void* context;
  // Called on the allocating thread, inside the allocator, never re-entered on that thread: it
  // must neither allocate nor call back into the allocator. Returns nonzero when the allocation
  // was recorded (its free is then looked for).
  int (*record_allocation)(void* context, const InprofAllocationEvent* event);
  // A recorded block was freed (or moved by realloc). Same rules.
  void (*record_free)(void* context, uint64_t address, uint64_t tid);
};

// Counts the interposer keeps (cumulative since attach).
struct InprofAllocationCounts {
  uint64_t sampled;    // allocations passed to record_allocation and recorded
  uint64_t untracked;  // recorded, but the set of large blocks had no room: frees not seen
  uint64_t frees;      // frees of recorded blocks
};

// Starts recording into `sink` (copied), or, with null, stops: returns once no thread is inside
// the sink any more. Returns INPROF_ALLOCATIONS_ABI, or 0 if the sink is refused.
int inprof_allocations_attach_v1(const InprofAllocationSink* sink);
// The calling thread's allocations are never recorded (the profiler's own threads).
void inprof_allocations_exclude_this_thread_v1(void);
void inprof_allocations_counts_v1(InprofAllocationCounts* out);
}

#endif  // INPROF_LIB_ALLOCATIONS_ALLOCATION_SINK_H_
