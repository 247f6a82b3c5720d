#include "perf_event_ring_linux.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "owned_fd_linux.h"
#include "sampling/kernel_ring_refusals.h"
#include "seccomp_state_linux.h"
#include "thread_proc_linux.h"
#include "unwind/arch.h"

namespace inprof::internal {
namespace {

#if defined(__x86_64__)
// perf's x86-64 register numbers: ax bx cx dx si di bp sp ip (0-8), then r8-r15 (16-23); the
// segment registers are refused in 64-bit mode and not needed.
constexpr uint64_t kRegsMask = 0x1ffull | (0xffull << 16);
// Position of each DWARF register (rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip) among the values
// the kernel writes, in increasing perf register number.
constexpr int kDwarfFromPerf[kRegisterCount] = {0,  3,  2,  1,  4,  5,  6,  7, 9,
                                                10, 11, 12, 13, 14, 15, 16, 8};
#elif defined(__aarch64__)
// x0-x30, sp, pc: perf's numbering is DWARF's.
constexpr uint64_t kRegsMask = (1ull << 33) - 1;
constexpr int kDwarfFromPerf[kRegisterCount] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                                11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                                22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
#endif
constexpr int kRegsInRecord = __builtin_popcountll(kRegsMask);

}  // namespace

namespace {
std::atomic<uint64_t> g_refused_allowance{0}, g_refused_permission{0}, g_refused_other{0};
}  // namespace

void count_ring_refusal(int error, bool from_mmap, bool charged) {
  if (error == ESRCH && !from_mmap) return;  // the thread ended meanwhile: nothing was refused
  std::atomic<uint64_t>& counter = charged || (from_mmap && error == EPERM) ? g_refused_allowance
                                   : (!from_mmap && (error == EACCES || error == EPERM))
                                       ? g_refused_permission
                                       : g_refused_other;
  counter.fetch_add(1, std::memory_order_relaxed);
}

KernelRingRefusals kernel_ring_refusals() {
  return {g_refused_allowance.load(std::memory_order_relaxed),
          g_refused_permission.load(std::memory_order_relaxed),
          g_refused_other.load(std::memory_order_relaxed)};
}

long pinned_kb() {
  char text[4096];
  if (read_small_file("/proc/self/status", text, sizeof(text)) <= 0) return -1;
  const char* line = std::strstr(text, "\nVmPin:");
  return line ? std::strtol(line + 7, nullptr, 10) : -1;
}

int PerfEventRing::open(const Spec& spec) {
  close();
  if (seccomp_filtered()) {  // a filter may kill the call rather than refuse it
    count_ring_refusal(EPERM, false);
    return EPERM;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  // The time the thread is on a CPU (what perf samples by default without a PMU): a per-thread
  // event counts only while its thread runs, so it never fires while the thread sleeps.
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = spec.period_ns;
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER |
                     PERF_SAMPLE_STACK_USER;
  attr.read_format = 0;  // the sample carries the event's count: the CPU time since open
  // Counting kernel time too (where the kernel allows it: perf_event_paranoid <= 1 or
  // CAP_PERFMON) keeps the samples whose interval ends while the thread is in the kernel (a
  // system call, a page fault): they carry the user registers and stack it will return to.
  // Otherwise those samples are skipped and the next one carries their CPU time.
  attr.exclude_kernel = spec.user_only ? 1 : 0;
  attr.exclude_hv = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;  // the clock of every other timestamp in the dump
  attr.sample_regs_user = kRegsMask;
  attr.sample_stack_user = spec.stack_bytes;
  const uint64_t cpu_before = read_thread_cpu_ns(spec.tid).value_or(0);
  int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, static_cast<pid_t>(spec.tid), -1,
                                    -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0 && !spec.user_only && (errno == EACCES || errno == EPERM)) {
    attr.exclude_kernel = 1;
    fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, static_cast<pid_t>(spec.tid), -1, -1,
                                  PERF_FLAG_FD_CLOEXEC));
  }
  if (fd < 0) {
    const int error = errno;
    count_ring_refusal(error, false);
    return error;
  }
  const size_t page = static_cast<size_t>(getpagesize());
  const size_t bytes = (1 + size_t(spec.data_pages)) * page;
  const long pinned_before = pinned_kb();
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  // The mapping keeps the event alive (unmapping it ends the event): the descriptor is closed at
  // once, so that the program's descriptor table holds nothing of ours between two uses. (The
  // number was ours for these few instructions only; an anonymous inode has no identity that
  // fstat could check.)
  ::close(fd);
  if (map == MAP_FAILED) {
    count_ring_refusal(error, true);
    return error;
  }
  // Charged to the program's locked-memory limit: that is the program's to use, not ours.
  const long pinned_after = pinned_kb();
  if (pinned_before < 0 || pinned_after < 0 || pinned_after > pinned_before) {
    count_ring_refusal(0, true, /*charged=*/true);
    munmap(map, bytes);
    return ENOMEM;
  }
  spec_ = spec;
  map_ = map;
  mapped_bytes_ = bytes;
  auto* meta = static_cast<perf_event_mmap_page*>(map);
  data_ = static_cast<uint8_t*>(map) + (meta->data_offset ? meta->data_offset : page);
  data_size_ = meta->data_size ? meta->data_size : size_t(spec.data_pages) * page;
  pending_bytes_ = 0;
  lost_ = 0;
  base_cpu_ns_ = cpu_before;
  return 0;
}

void PerfEventRing::close() {
  if (map_ == nullptr) return;
  munmap(map_, mapped_bytes_);
  map_ = nullptr;
  data_ = nullptr;
  mapped_bytes_ = 0;
}

void PerfEventRing::read_ring(uint64_t offset, void* out, size_t n) const {
  const uint64_t at = offset % data_size_;
  const size_t first = static_cast<size_t>(std::min<uint64_t>(n, data_size_ - at));
  std::memcpy(out, data_ + at, first);
  if (first < n) std::memcpy(static_cast<uint8_t*>(out) + first, data_, n - first);
}

void PerfEventRing::consume(uint64_t bytes) {
  auto* meta = static_cast<perf_event_mmap_page*>(map_);
  const uint64_t tail = meta->data_tail + bytes;
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);  // the kernel may reuse the space
}

bool PerfEventRing::needs_reading() const {
  if (map_ == nullptr) return false;
  auto* meta = static_cast<perf_event_mmap_page*>(map_);
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  return head - meta->data_tail >= data_size_ / 4 * 3;
}

uint64_t PerfEventRing::samples_until_reading() const {
  if (map_ == nullptr) return UINT64_MAX;
  auto* meta = static_cast<perf_event_mmap_page*>(map_);
  const uint64_t used = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) - meta->data_tail;
  const uint64_t mark = data_size_ / 4 * 3;
  if (used >= mark) return 0;
  // A sample's record: header, ids, time, count, ABI, registers, the stack and its two sizes.
  const uint64_t largest_record = 64 + 8 * uint64_t(kRegsInRecord) + spec_.stack_bytes;
  return (mark - used) / largest_record;
}

bool PerfEventRing::next(StackSnapshot* out, uint8_t* staging, size_t staging_size) {
  if (map_ == nullptr) return false;
  auto* meta = static_cast<perf_event_mmap_page*>(map_);
  for (;;) {
    const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    const uint64_t tail = meta->data_tail;
    if (head - tail < sizeof(perf_event_header)) return false;
    perf_event_header header;
    read_ring(tail, &header, sizeof(header));
    if (header.size < sizeof(header) || header.size > head - tail) {
      // Not possible from a sane kernel; drop what is there rather than loop on it.
      consume(head - tail);
      return false;
    }
    if (header.type == PERF_RECORD_LOST) {
      uint64_t words[2] = {};  // id, lost
      if (header.size >= sizeof(header) + sizeof(words)) {
        read_ring(tail + sizeof(header), words, sizeof(words));
        lost_ += words[1];
      }
      consume(header.size);
      continue;
    }
    if (header.type != PERF_RECORD_SAMPLE) {
      consume(header.size);  // throttling notices and the like
      continue;
    }
    const uint64_t at = tail % data_size_;
    const uint8_t* record;
    if (at + header.size <= data_size_) {
      record = data_ + at;
    } else if (header.size <= staging_size) {
      read_ring(tail, staging, header.size);
      record = staging;
    } else {
      consume(header.size);
      continue;
    }
    if (!parse_sample(record, header.size, out)) {
      consume(header.size);
      continue;
    }
    pending_bytes_ = header.size;
    return true;
  }
}

void PerfEventRing::pop() {
  if (map_ == nullptr || pending_bytes_ == 0) return;
  consume(pending_bytes_);
  pending_bytes_ = 0;
}

bool PerfEventRing::parse_sample(const uint8_t* record, size_t size, StackSnapshot* out) const {
  // Layout for our sample_type: header; pid, tid (u32 each); time; read value; abi; registers
  // (when abi != 0); stack size; stack bytes; dynamic size (when size != 0).
  size_t offset = sizeof(perf_event_header);
  auto word = [&](uint64_t* value) {
    if (size - offset < 8) return false;
    std::memcpy(value, record + offset, 8);
    offset += 8;
    return true;
  };
  uint64_t pid_tid, time, count, abi;
  if (!word(&pid_tid) || !word(&time) || !word(&count) || !word(&abi)) return false;
  if (abi == PERF_SAMPLE_REGS_ABI_NONE) return false;  // no user registers: nothing to unwind
  uint64_t values[kRegsInRecord];
  for (uint64_t& v : values) {
    if (!word(&v)) return false;
  }
  uint64_t stack_size = 0;
  if (!word(&stack_size) || size - offset < stack_size) return false;
  const uint8_t* stack = record + offset;
  offset += stack_size;
  uint64_t dynamic = 0;
  if (stack_size != 0 && !word(&dynamic)) return false;
  if (dynamic > stack_size) dynamic = stack_size;

  for (int i = 0; i < kRegisterCount; ++i) out->regs[i] = values[kDwarfFromPerf[i]];
  out->time_ns = time;
  out->thread_cpu_ns = base_cpu_ns_ + count;
  out->expirations_merged = 0;
  out->stack_start = out->regs[kRegSp];
  out->stack_size = static_cast<size_t>(dynamic);
  out->buffer = const_cast<uint8_t*>(stack);
  out->capacity = static_cast<size_t>(stack_size);
  out->stack_found = dynamic > 0;
  // Cut where the kernel's copy stopped short of the requested size only because the memory
  // above ended; a full copy may have more stack above it (the caller knows the mapping).
  out->stack_truncated = dynamic == stack_size;
  out->stack_region_known = true;
  out->registers_partial = false;
  out->runnable = false;
  out->label_source = nullptr;
  out->label_owner = 0;
  out->labels_from_copy = true;
  out->label_count =
      find_label_records(stack, out->stack_size, out->stack_start, out->labels, kMaxLabelDepth);
  return true;
}

}  // namespace inprof::internal
