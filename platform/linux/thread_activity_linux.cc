#include "thread_activity_linux.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "perf_event_ring_linux.h"
#include "seccomp_state_linux.h"

namespace inprof::internal {
namespace {

// What follows every record (sample_id_all with PERF_SAMPLE_TID | PERF_SAMPLE_TIME).
struct SampleId {
  uint32_t pid;
  uint32_t tid;
  uint64_t time;
};

// PERF_RECORD_FORK and PERF_RECORD_EXIT.
struct TaskRecord {
  uint32_t pid, ppid, tid, ptid;
  uint64_t time;
};

int open_event(perf_event_attr* attr, uint64_t tid, int cpu) {
  return static_cast<int>(
      syscall(SYS_perf_event_open, attr, static_cast<pid_t>(tid), cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

bool ThreadActivityLinux::open(uint64_t starter) {
  close();
  if (seccomp_filtered()) {  // a filter may kill the call rather than refuse it
    count_ring_refusal(EPERM, false);
    return false;
  }
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  if (configured <= 0 || configured > kMostCpus) return false;
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;  // counts nothing: only the side records below
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  attr.sample_id_all = 1;
  attr.context_switch = 1;
  attr.task = 1;
  attr.comm = 1;  // renames: a thread's name as it sets it, even if it ends at once
  attr.inherit = 1;
  attr.inherit_thread = 1;  // the program's threads, not the processes it forks (Linux 5.13)
  attr.remove_on_exec = 1;  // nor the image it executes
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  const size_t page = static_cast<size_t>(getpagesize());
  map_bytes_ = (1 + size_t(kDataPages)) * page;
  rings_bytes_ = sizeof(Ring) * static_cast<size_t>(configured);
  void* rings =
      mmap(nullptr, rings_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (rings == MAP_FAILED) return false;
  rings_ = new (rings) Ring[configured];
  cpus_ = static_cast<int>(configured);
  own_pid_ = static_cast<uint32_t>(getpid());
  int opened = 0;
  for (int cpu = 0; cpu < cpus_; ++cpu) {
    const int fd = open_event(&attr, starter, cpu);
    if (fd < 0) {
      if (errno == ENODEV) continue;  // an offline CPU: nothing runs there
      count_ring_refusal(errno, false);
      close();
      return false;
    }
    const long pinned_before = pinned_kb();
    void* map = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int map_error = errno;
    ::close(fd);  // the mapping keeps the event (and what it inherited) alive
    if (map == MAP_FAILED) {
      count_ring_refusal(map_error, true);
      close();
      return false;
    }
    const long pinned_after = pinned_kb();
    if (pinned_before < 0 || pinned_after < 0 || pinned_after > pinned_before) {
      count_ring_refusal(0, true, /*charged=*/true);
      munmap(map, map_bytes_);  // charged to the program's RLIMIT_MEMLOCK: the program's
      close();
      return false;
    }
    auto* meta = static_cast<perf_event_mmap_page*>(map);
    Ring& ring = rings_[cpu];
    ring.map = map;
    ring.data = static_cast<uint8_t*>(map) + (meta->data_offset ? meta->data_offset : page);
    ring.data_size = meta->data_size ? meta->data_size : uint64_t(kDataPages) * page;
    ++opened;
  }
  if (opened == 0) {
    close();
    return false;
  }
  return true;
}

void ThreadActivityLinux::close() {
  if (rings_ == nullptr) return;
  for (int cpu = 0; cpu < cpus_; ++cpu) {
    if (rings_[cpu].map != nullptr) munmap(rings_[cpu].map, map_bytes_);
  }
  munmap(rings_, rings_bytes_);
  rings_ = nullptr;
  cpus_ = 0;
}

void ThreadActivityLinux::drain(void (*deliver)(void*, const ThreadLister::Activity&),
                                void* context) {
  for (int cpu = 0; cpu < cpus_; ++cpu) {
    if (rings_[cpu].map != nullptr) drain_ring(rings_[cpu], deliver, context);
  }
}

void ThreadActivityLinux::drain_ring(Ring& ring,
                                     void (*deliver)(void*, const ThreadLister::Activity&),
                                     void* context) {
  using Kind = ThreadLister::Activity::Kind;
  auto* meta = static_cast<perf_event_mmap_page*>(ring.map);
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  // Copies `n` bytes at ring offset `offset` (wrapping).
  auto read = [&ring](uint64_t offset, void* out, size_t n) {
    const uint64_t at = offset % ring.data_size;
    const size_t first = static_cast<size_t>(std::min<uint64_t>(n, ring.data_size - at));
    std::memcpy(out, ring.data + at, first);
    if (first < n) std::memcpy(static_cast<uint8_t*>(out) + first, ring.data, n - first);
  };
  const uint32_t own_pid = own_pid_;
  while (head - tail >= sizeof(perf_event_header)) {
    perf_event_header header;
    read(tail, &header, sizeof(header));
    if (header.size < sizeof(header) || header.size > head - tail) {
      // Not possible from a sane kernel: drop the rest, and say something may be missing.
      tail = head;
      deliver(context, {Kind::kLost, 0, 0});
      break;
    }
    const uint64_t body = tail + sizeof(header);
    const size_t body_size = header.size - sizeof(header);
    SampleId id{};
    if (header.type == PERF_RECORD_SWITCH && body_size >= sizeof(SampleId)) {
      read(body, &id, sizeof(id));
      const bool off = (header.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
      deliver(context, {off ? Kind::kOff : Kind::kOn, id.tid, id.time});
    } else if ((header.type == PERF_RECORD_FORK || header.type == PERF_RECORD_EXIT) &&
               body_size >= sizeof(TaskRecord)) {
      TaskRecord task;
      read(body, &task, sizeof(task));
      // A process the program forked is reported too (its first thread), but not followed.
      if (task.pid == own_pid) {
        const bool created = header.type == PERF_RECORD_FORK;
        deliver(context, {created ? Kind::kCreated : Kind::kEnded, task.tid, task.time, nullptr,
                          created ? task.ptid : 0});
      }
    } else if (header.type == PERF_RECORD_COMM && body_size > 8 + sizeof(SampleId) &&
               (header.misc & PERF_RECORD_MISC_COMM_EXEC) == 0) {
      // pid, tid, the name (at most 16 bytes with its NUL, padded to 8), then the SampleId.
      uint32_t ids[2];
      read(body, ids, sizeof(ids));
      const size_t name_size = body_size - 8 - sizeof(SampleId);
      char name[24] = {};
      read(body + 8, name, std::min<size_t>(name_size, sizeof(name) - 1));
      read(body + 8 + name_size, &id, sizeof(id));
      if (ids[0] == own_pid) deliver(context, {Kind::kNamed, ids[1], id.time, name});
    } else if (header.type == PERF_RECORD_LOST) {
      // {id, lost} then the sample id: its time is when the kernel could write again.
      SampleId id{};
      if (body_size >= 16 + sizeof(SampleId)) read(body + 16, &id, sizeof(id));
      deliver(context, {Kind::kLost, 0, id.time});
    }
    tail += header.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);  // the kernel may reuse the space
}

}  // namespace inprof::internal
