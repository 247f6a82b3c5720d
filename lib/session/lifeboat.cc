#include "session/lifeboat.h"

#include <cstring>
#include <new>

#include "dump/byte_io.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

constexpr size_t kHeaderBytes = (sizeof(LifeboatHeader) + 4095) & ~size_t(4095);
// Metadata between two chunks: thread starts and names, modules. A writer that fills it lands
// early (writes its chunk), so this bounds nothing but how often that happens.
constexpr size_t kJournalBytes = size_t(256) << 10;

std::string& dock_name() {
  static std::string name;  // written once, before any session starts
  return name;
}

}  // namespace

void set_lifeboat_dock(const std::string& name) { dock_name() = name; }

std::unique_ptr<Lifeboat> Lifeboat::launch(size_t ring_capacity, int dump_descriptor,
                                           uint64_t dump_size, uint64_t start_ns) {
  if (dock_name().empty() || dump_descriptor < 0 || ring_capacity < 4096 ||
      (ring_capacity & (ring_capacity - 1))) {
    return nullptr;
  }
  const size_t bytes = kHeaderBytes + kJournalBytes + ring_capacity;
  const LifeboatMemory memory = create_lifeboat_memory(bytes);
  if (!memory.base) return nullptr;
  std::unique_ptr<Lifeboat> boat(new Lifeboat(memory.base, bytes));
  auto* h = new (memory.base) LifeboatHeader{};
  h->header_bytes = sizeof(LifeboatHeader);
  h->pid = process_id();
  h->start_ns = start_ns;
  h->journal_offset = kHeaderBytes;
  h->journal_capacity = kJournalBytes;
  h->ring_offset = kHeaderBytes + kJournalBytes;
  h->ring_capacity = ring_capacity;
  h->state[0] = LifeboatState{dump_size, 0, 0, 0};
  if (!dump_identity(dump_descriptor, &h->dump_device, &h->dump_inode, h->dump_path,
                     sizeof(h->dump_path))) {
    hand_over_lifeboat(memory.handle, std::string());
    return nullptr;
  }
  // Last: a launcher takes nothing without it.
  std::atomic_ref(h->magic).store(kLifeboatMagic, std::memory_order_release);
  if (!hand_over_lifeboat(memory.handle, dock_name())) return nullptr;  // boat's destructor unmaps
  return boat;
}

Lifeboat::~Lifeboat() { release_lifeboat_memory(base_, bytes_, kHeaderBytes); }

std::span<uint64_t> Lifeboat::ring_storage() const {
  auto* base = static_cast<uint8_t*>(base_) + header()->ring_offset;
  return {reinterpret_cast<uint64_t*>(base), header()->ring_capacity / 8};
}

bool Lifeboat::keep(RecordType type, std::span<const uint8_t> payload) {
  // Framed as in a chunk: type, varint size, payload.
  uint8_t frame[11];
  size_t n = 0;
  frame[n++] = static_cast<uint8_t>(type);
  for (uint64_t v = payload.size();; v >>= 7) {
    frame[n++] = static_cast<uint8_t>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  if (journal_used_ + n + payload.size() > header()->journal_capacity) return false;
  auto* journal = static_cast<uint8_t*>(base_) + header()->journal_offset;
  std::memcpy(journal + journal_used_, frame, n);
  std::memcpy(journal + journal_used_ + n, payload.data(), payload.size());
  journal_used_ += n + payload.size();
  LifeboatHeader* h = header();
  const uint64_t current = h->current.load(std::memory_order_relaxed) & 1;
  // One word, after the bytes it covers: the state in force stays consistent.
  std::atomic_ref(h->state[current].journal_bytes).store(journal_used_, std::memory_order_release);
  return true;
}

void Lifeboat::landed(uint64_t dump_size, uint64_t ring_written_to, bool finished) {
  LifeboatHeader* h = header();
  const uint64_t next = (h->current.load(std::memory_order_relaxed) + 1) & 1;
  h->state[next] = LifeboatState{dump_size, ring_written_to, 0, finished ? 1u : 0u};
  h->current.store(next, std::memory_order_release);
  journal_used_ = 0;
}

}  // namespace inprof::internal
