// What a stack copier captures of a thread in its suspended moment: registers and a copy of the
// top of its stack. Unwinders work on this copy after the thread has resumed, so every read of
// "the stack" is a bounds-checked read of our own buffer.
#ifndef INPROF_LIB_STACK_SNAPSHOT_H_
#define INPROF_LIB_STACK_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "markers/label_stack.h"
#include "unwind/arch.h"

namespace inprof::internal {

// What a descriptor a sleeping thread waits on is (values kept in dumps: FORMAT.md).
enum DescriptorKind : uint8_t {
  kDescriptorUnknown = 0,
  kDescriptorFile = 1,
  kDescriptorSocket = 2,
  kDescriptorPipe = 3,  // an anonymous pipe (a named FIFO is the file it is)
  kDescriptorEventfd = 4,
  kDescriptorEpoll = 5,
  kDescriptorTimerfd = 6,
  kDescriptorSignalfd = 7,
  kDescriptorDevice = 8,
  kDescriptorOther = 9,  // another anonymous inode (inotify, io_uring, pidfd, ...)
};

struct StackSnapshot {
  uint64_t regs[kRegisterCount] = {};  // by DWARF register number
  uint64_t time_ns = 0;                // monotonic clock, taken while the thread was stopped
  uint64_t thread_cpu_ns = 0;  // the thread's CPU time then, where the copier reads it; 0: unknown
  // Given by the caller: the thread's CPU time read just before copy() was asked (0: none). A
  // copier that proves the thread did not run during the copy by its clock may start from it
  // rather than read the clock once more (one system call of ~10 in a new thread's first copy).
  uint64_t cpu_read_before_ns = 0;
  // Self-sampling: earlier timer expirations merged into this one while the thread waited for a
  // CPU. It did not run meanwhile, so its stack then was this one.
  uint64_t expirations_merged = 0;

  uint64_t stack_start = 0;        // address (in the thread) of the first copied byte: its SP
  size_t stack_size = 0;           // bytes copied
  bool stack_found = false;        // false: the stack could not be located; registers only
  bool stack_truncated = false;    // the stack continues above the copy
  bool stack_region_known = true;  // false: SP was outside the mapping the copier was told of
  // Only SP and PC are known (a thread asleep in the kernel, copied without stopping it): the
  // frame pointer and, where there is one, the link register are not.
  bool registers_partial = false;
  bool runnable = false;  // copied while stopped outside a system call (it was running code)
  // Copied asleep in a system call (where the OS says which): its number on this architecture
  // and its first argument (what most calls that wait wait on); -1: not known to be in one.
  int64_t wait_call = -1;
  uint64_t wait_object = 0;
  uint8_t wait_object_kind = 0;  // DescriptorKind, where the call waits on a descriptor

  uint8_t* buffer = nullptr;  // owned by the sampler; `capacity` bytes
  size_t capacity = 0;

  // Labels: the sampler names the thread's label stack, the copier copies its live entries.
  // Or, for a copy the kernel took (no handler ran), the labels whose records are in the copy:
  // `labels_from_copy` (those of scopes the copy does not hold are not there).
  bool labels_from_copy = false;
  const LabelStack* label_source = nullptr;
  uint64_t label_owner = 0;  // the thread id the label stack must belong to
  LabelEntry labels[kMaxLabelDepth];
  size_t label_count = 0;

  uint64_t pc() const { return regs[kRegPc]; }
  uint64_t sp() const { return regs[kRegSp]; }
  uint64_t fp() const { return regs[kRegFp]; }
  uint64_t stack_end() const { return stack_start + stack_size; }

  // Reads the 8-byte word the thread had at `address`, if it lies in the copy.
  bool read_word(uint64_t address, uint64_t* out) const {
    if (address < stack_start || address - stack_start > stack_size ||
        stack_size - (address - stack_start) < 8) {
      return false;
    }
    std::memcpy(out, buffer + (address - stack_start), 8);
    return true;
  }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_STACK_SNAPSHOT_H_
