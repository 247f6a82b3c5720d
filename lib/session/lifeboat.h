// A lifeboat: shared memory that outlives the process, for the records a streaming session has
// not yet written to its dump when the process ends without stopping it (`_exit()`, a fatal
// signal, SIGKILL, `execve()`). No exit code of ours runs then, and the writer's last half second
// would be lost: the shell of `inprof record -- sh -c '…'` leaves through `_exit()`.
//
// Only `inprof record`, which outlives the processes it starts, can take the boat: it listens
// (INPROF_LIFEBOAT) and each session hands it, at start, a memory object holding this header, a
// journal and the session's ring (the ring's records stay there until their chunk is on disk,
// ring_buffer.h drain_held()). The process keeps only the mapping: no descriptor. When the
// process is gone and its session had not finished, the launcher lands the boat: it cuts the dump
// back to the last state the writer recorded here and writes, after it, what the journal and the
// ring held from then on, and the end (lifeboat_landing.h). Elsewhere (no launcher, no such
// memory) the ring lives in the process's own memory, as before.
#ifndef INPROF_LIB_SESSION_LIFEBOAT_H_
#define INPROF_LIB_SESSION_LIFEBOAT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "dump/dump_records.h"

namespace inprof::internal {

inline constexpr uint64_t kLifeboatMagic = 0x3174616f62666c69;  // "ilfboat1"

// What the dump holds for sure, recorded by the writer after each chunk it wrote: the dump's
// size, the ring position up to which every record is in it, and how much of the journal the
// chunk after it needs. Two slots; `current` names the one in force, switched once the other is
// written whole, so a process killed at any instruction leaves one that is consistent.
struct LifeboatState {
  uint64_t dump_size;
  uint64_t ring_written_to;
  uint64_t journal_bytes;
  uint64_t finished;  // 1: the session ended its dump itself (nothing to land)
};

struct LifeboatHeader {
  uint64_t magic;
  uint64_t header_bytes;  // sizeof(LifeboatHeader): a launcher of another build refuses it
  uint64_t pid;
  uint64_t start_ns;  // the session's start, CLOCK_MONOTONIC (the dump's times count from it)
  uint64_t dump_device;
  uint64_t dump_inode;
  uint64_t journal_offset;
  uint64_t journal_capacity;
  uint64_t ring_offset;
  uint64_t ring_capacity;
  std::atomic<uint64_t> current;
  LifeboatState state[2];
  char dump_path[4096];  // absolute, NUL-terminated
};

// The process side: made by the session at start, written by its writer thread alone.
class Lifeboat {
 public:
  // Hands the launcher named by INPROF_LIFEBOAT (lifeboat_dock_name()) a boat for a ring of
  // `ring_capacity` bytes (a power of two) and the dump open at `dump_descriptor`; null where
  // there is no launcher, or anything fails (the session then keeps its ring in its own memory).
  static std::unique_ptr<Lifeboat> launch(size_t ring_capacity, int dump_descriptor,
                                          uint64_t dump_size, uint64_t start_ns);
  ~Lifeboat();
  Lifeboat(const Lifeboat&) = delete;
  Lifeboat& operator=(const Lifeboat&) = delete;

  std::span<uint64_t> ring_storage() const;
  // Keeps a record the writer took from elsewhere than the ring (the metadata queue) until the
  // next landed(); false if the journal has no room left (land first, then keep it).
  bool keep(RecordType type, std::span<const uint8_t> payload);
  // The writer has written its chunk: the dump is `dump_size` bytes long and holds every ring
  // record before `ring_written_to` and everything kept. `finished`: it holds the end too.
  void landed(uint64_t dump_size, uint64_t ring_written_to, bool finished);

 private:
  Lifeboat(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  LifeboatHeader* header() const { return static_cast<LifeboatHeader*>(base_); }

  void* base_;
  size_t bytes_;
  uint64_t journal_used_ = 0;
};

// The launcher's name (INPROF_LIFEBOAT, read with the other variables when the library loads;
// empty: none). Set before any session starts.
void set_lifeboat_dock(const std::string& name);

// Per OS (platform/<os>/lifeboat_*.cc): shared memory of `bytes`, zeroed, that a launcher can be
// handed (null: none); handing it to the launcher `dock` (closes the handle whatever happens; -1:
// only that); unmapping it; and the dump's identity. The memory stays mapped in a child made by
// fork(): the child's session is abandoned there and writes nothing into it.
struct LifeboatMemory {
  void* base = nullptr;
  int handle = -1;
};
LifeboatMemory create_lifeboat_memory(size_t bytes);
bool hand_over_lifeboat(int handle, const std::string& dock);
// Unmaps it; all but its first `keep` bytes (the header) are given back to the system first:
// the launcher holds the memory object until the process ends, a session may end long before.
void release_lifeboat_memory(void* base, size_t bytes, size_t keep);
bool dump_identity(int descriptor, uint64_t* device, uint64_t* inode, char* path, size_t size);

}  // namespace inprof::internal

#endif  // INPROF_LIB_SESSION_LIFEBOAT_H_
