// malloc's heaps backed by transparent huge pages, asked for from within the process. glibc does
// so itself only under the tunable glibc.malloc.hugetlb=1, read at start-up, which the tool used
// to get by starting itself again: 1.4-2.2 ms of CPU a run (loading its libraries twice), a
// tenth of a warm run of the symbol cache. Here the main heap is grown once, ahead, and advised
// (MADV_HUGEPAGE), and each thread that allocates much advises its own arena's heap as it
// starts: most of the page faults saved in the same CPU time, no restart (1,250 python3.11
// addresses, cold: 14,000 faults without huge pages, 9,400 so, 8,700 with the tunable).
//
// Advice only: where it cannot be given (not glibc, huge pages off, a heap not where glibc puts
// it), memory is what it would have been without. None when the user set glibc's own tunable
// glibc.malloc.hugetlb (GLIBC_TUNABLES): glibc then does as told.
#ifndef INPROF_TOOLS_SYMBOLICATE_HUGE_PAGE_HEAP_H_
#define INPROF_TOOLS_SYMBOLICATE_HUGE_PAGE_HEAP_H_

namespace inprof::symbolicate {

// Once, in main before any other thread: sets malloc's sizes (memory freed is kept for reuse,
// not returned and faulted in again) and advises the main heap, grown ahead.
void prepare_huge_page_heap();
// In a thread that allocates much (a symbolizing worker), before it does: its arena's heap.
void advise_this_threads_heap();

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_HUGE_PAGE_HEAP_H_
