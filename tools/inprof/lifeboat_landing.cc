#include "lifeboat_landing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "dump/byte_io.h"
#include "dump/dump_writer.h"
#include "session/lifeboat.h"
#include "session/output_file.h"
#include "session/ring_buffer.h"

namespace inprof::launcher {
namespace {

using inprof::Status;
using internal::LifeboatHeader;
using internal::LifeboatState;
using internal::RecordType;

// The dump, opened again to append after the state the boat records.
class DumpFile final : public internal::OutputFile {
 public:
  explicit DumpFile(int fd) : fd_(fd) {}
  ~DumpFile() override { (void)close(); }
  Status write(std::span<const uint8_t> bytes) override {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::error(Status::Code::kOutputError, std::strerror(errno));
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return {};
  }
  Status close() override {
    if (fd_ >= 0 && ::close(fd_) != 0) {
      fd_ = -1;
      return Status::error(Status::Code::kOutputError, std::strerror(errno));
    }
    fd_ = -1;
    return {};
  }

 private:
  int fd_;
};

const LifeboatHeader* header_of(std::span<const uint8_t> memory) {
  if (memory.size() < sizeof(LifeboatHeader)) return nullptr;
  const auto* h = reinterpret_cast<const LifeboatHeader*>(memory.data());
  if (h->magic != internal::kLifeboatMagic || h->header_bytes != sizeof(LifeboatHeader)) {
    return nullptr;
  }
  return h;
}

LifeboatState state_of(const LifeboatHeader& h) {
  return h.state[h.current.load(std::memory_order_acquire) & 1];
}

bool fits(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace

uint64_t lifeboat_pid(std::span<const uint8_t> memory) {
  const LifeboatHeader* h = header_of(memory);
  return h ? h->pid : 0;
}

bool lifeboat_finished(std::span<const uint8_t> memory) {
  const LifeboatHeader* h = header_of(memory);
  return !h || state_of(*h).finished != 0;
}

Landing land_lifeboat(std::span<const uint8_t> memory, uint64_t end_ns) {
  Landing landing;
  const LifeboatHeader* h = header_of(memory);
  if (!h) return {false, false, 0, "", "not a lifeboat of this inprof"};
  const LifeboatState state = state_of(*h);
  if (std::memchr(h->dump_path, 0, sizeof(h->dump_path)) == nullptr) {
    return {false, false, 0, "", "a damaged lifeboat (its dump's name)"};
  }
  landing.dump_path = h->dump_path;
  if (state.finished) {
    landing.finished = true;
    return landing;
  }
  const uint64_t cap = h->ring_capacity;
  if (!fits(h->journal_offset, h->journal_capacity, memory.size()) ||
      !fits(h->ring_offset, cap, memory.size()) || state.journal_bytes > h->journal_capacity ||
      cap < 4096 || (cap & (cap - 1)) != 0 || h->ring_offset % 8 != 0) {
    landing.error = "a damaged lifeboat (its sizes)";
    return landing;
  }
  // Read too: a file that does not begin as a dump is never cut or written, whatever the boat says.
  const int fd = ::open(h->dump_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  uint8_t magic[sizeof(internal::kDumpMagic)] = {};
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      pread(fd, magic, sizeof(magic), 0) != static_cast<ssize_t>(sizeof(magic)) ||
      std::memcmp(magic, internal::kDumpMagic, sizeof(magic)) != 0 ||
      static_cast<uint64_t>(st.st_dev) != h->dump_device ||
      static_cast<uint64_t>(st.st_ino) != h->dump_inode ||
      static_cast<uint64_t>(st.st_size) < state.dump_size) {
    if (fd >= 0) ::close(fd);
    landing.error = "its dump is gone or was replaced";
    return landing;
  }
  // What the writer had written after its last recorded state (a chunk cut short, an exec's
  // end record) is written again below, whole, from the boat.
  if (ftruncate(fd, static_cast<off_t>(state.dump_size)) != 0 ||
      lseek(fd, 0, SEEK_END) != static_cast<off_t>(state.dump_size)) {
    ::close(fd);
    landing.error = std::string("cannot rewrite its dump: ") + std::strerror(errno);
    return landing;
  }
  auto dump = internal::DumpWriter::append_to(std::make_unique<DumpFile>(fd), state.dump_size);
  uint64_t records = 0;
  // The journal: framed records (type, varint size, payload), as the writer kept them.
  internal::ByteReader journal(memory.subspan(h->journal_offset, state.journal_bytes));
  while (journal.remaining() > 0) {
    uint8_t type = 0;
    uint64_t size = 0;
    if (!journal.u8(type) || !journal.varint(size) || size > journal.remaining()) break;
    dump->add_payload(static_cast<RecordType>(type), journal.take(size));
    ++records;
  }
  const auto* ring = reinterpret_cast<const uint64_t*>(memory.data() + h->ring_offset);
  records += internal::RingBuffer::read_image(
      std::span<const uint64_t>(ring, cap / 8), state.ring_written_to,
      [&](uint8_t type, std::span<const uint8_t> payload) {
        dump->add_payload(static_cast<RecordType>(type), payload);
      });
  dump->add(RecordType::kLanded, internal::LandedRecord{records});
  dump->add(RecordType::kEnd, internal::EndRecord{end_ns > h->start_ns ? end_ns - h->start_ns : 0});
  const Status closed = dump->close();
  if (!closed.ok()) {
    landing.error = "cannot write its dump: " + closed.message();
    return landing;
  }
  landing.landed = true;
  landing.records = records;
  return landing;
}

}  // namespace inprof::launcher
