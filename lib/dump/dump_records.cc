#include "dump/dump_records.h"

namespace inprof::internal {
namespace {

// CPU deltas are stored +1 so that 0 can mean "unknown".
void put_optional(ByteWriter& w, std::optional<uint64_t> v) { w.varint(v ? *v + 1 : 0); }
bool get_optional(ByteReader& r, std::optional<uint64_t>& out) {
  uint64_t v;
  if (!r.varint(v)) return false;
  out = v ? std::optional<uint64_t>(v - 1) : std::nullopt;
  return true;
}
bool get_u32(ByteReader& r, uint32_t& out) {
  uint64_t v;
  if (!r.varint(v) || v > UINT32_MAX) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

void encode(ByteWriter& w, const ProcessRecord& r) {
  w.varint(r.pid);
  w.varint(r.start_unix_ns);
  w.varint(r.interval_ns);
  w.string(r.arch);
  w.string(r.os);
  w.string(r.executable);
  w.varint(r.command_line.size());
  for (const auto& arg : r.command_line) w.string(arg);
  w.string(r.library_version);
}

bool decode(ByteReader& r, ProcessRecord& out) {
  uint64_t argc;
  if (!r.varint(out.pid) || !r.varint(out.start_unix_ns) || !r.varint(out.interval_ns) ||
      !r.string(out.arch, kMaxStringSize) || !r.string(out.os, kMaxStringSize) ||
      !r.string(out.executable, kMaxStringSize) || !r.varint(argc) || argc > 4096) {
    return false;
  }
  out.command_line.resize(argc);
  for (auto& arg : out.command_line) {
    if (!r.string(arg, kMaxStringSize)) return false;
  }
  return r.string(out.library_version, kMaxStringSize);
}

void encode(ByteWriter& w, const ModuleRecord& r) {
  w.varint(r.id);
  w.varint(r.time_ns);
  w.varint(r.start);
  w.varint(r.end - r.start);
  w.varint(r.load_bias);
  w.varint(r.file_offset);
  w.varint(r.flags);
  w.string(r.path);
  w.bytes(r.build_id);
}

bool decode(ByteReader& r, ModuleRecord& out) {
  uint64_t size;
  if (!r.varint(out.id) || !r.varint(out.time_ns) || !r.varint(out.start) || !r.varint(size) ||
      !r.varint(out.load_bias) || !r.varint(out.file_offset) || !get_u32(r, out.flags) ||
      !r.string(out.path, kMaxStringSize) || !r.bytes(out.build_id, kMaxBuildIdSize)) {
    return false;
  }
  if (size > UINT64_MAX - out.start) return false;
  out.end = out.start + size;
  return true;
}

void encode(ByteWriter& w, const ModuleUnloadRecord& r) {
  w.varint(r.id);
  w.varint(r.time_ns);
}

bool decode(ByteReader& r, ModuleUnloadRecord& out) {
  return r.varint(out.id) && r.varint(out.time_ns);
}

void encode(ByteWriter& w, const ThreadRecord& r) {
  w.varint(r.tid);
  w.varint(r.time_ns);
  w.varint(r.flags);
  w.string(r.name);
}

bool decode(ByteReader& r, ThreadRecord& out) {
  return r.varint(out.tid) && r.varint(out.time_ns) && get_u32(r, out.flags) &&
         r.string(out.name, kMaxStringSize);
}

void encode(ByteWriter& w, const ThreadEndRecord& r) {
  w.varint(r.tid);
  w.varint(r.time_ns);
}

bool decode(ByteReader& r, ThreadEndRecord& out) { return r.varint(out.tid) && r.varint(out.time_ns); }

void encode_sample(ByteWriter& w, uint64_t tid, uint64_t time_ns,
                   std::optional<uint64_t> cpu_delta_ns, uint32_t flags,
                   std::span<const uint64_t> frames, std::span<const LeafCandidate> candidates) {
  w.varint(tid);
  w.varint(time_ns);
  put_optional(w, cpu_delta_ns);
  w.varint(flags);
  w.varint(frames.size());
  // Neighbouring frames usually lie in the same module: deltas keep them short.
  uint64_t previous = 0;
  for (uint64_t frame : frames) {
    w.svarint(static_cast<int64_t>(frame - previous));
    previous = frame;
  }
  w.varint(candidates.size());
  for (const auto& c : candidates) {
    w.u8(c.slot);
    w.varint(c.value);
  }
}

bool decode(ByteReader& r, SampleRecord& out) {
  uint64_t count;
  if (!r.varint(out.tid) || !r.varint(out.time_ns) || !get_optional(r, out.cpu_delta_ns) ||
      !get_u32(r, out.flags) || !r.varint(count) || count > kMaxFrames) {
    return false;
  }
  out.frames.resize(count);
  uint64_t previous = 0;
  for (auto& frame : out.frames) {
    int64_t delta;
    if (!r.svarint(delta)) return false;
    frame = previous + static_cast<uint64_t>(delta);
    previous = frame;
  }
  if (!r.varint(count) || count > kMaxLeafCandidates) return false;
  out.leaf_candidates.resize(count);
  for (auto& c : out.leaf_candidates) {
    if (!r.u8(c.slot) || !r.varint(c.value)) return false;
  }
  return true;
}

void encode(ByteWriter& w, const SampleRepeatRecord& r) {
  w.varint(r.tid);
  w.varint(r.time_ns);
  put_optional(w, r.cpu_delta_ns);
}

bool decode(ByteReader& r, SampleRepeatRecord& out) {
  return r.varint(out.tid) && r.varint(out.time_ns) && get_optional(r, out.cpu_delta_ns);
}

void encode(ByteWriter& w, const StatsRecord& r) {
  w.varint(r.samples_recorded);
  w.varint(r.samples_dropped);
  w.varint(r.threads_timed_out);
  w.varint(r.ticks_late);
}

bool decode(ByteReader& r, StatsRecord& out) {
  return r.varint(out.samples_recorded) && r.varint(out.samples_dropped) &&
         r.varint(out.threads_timed_out) && r.varint(out.ticks_late);
}

void encode(ByteWriter& w, const EndRecord& r) { w.varint(r.time_ns); }

bool decode(ByteReader& r, EndRecord& out) { return r.varint(out.time_ns); }

void append_record(std::vector<uint8_t>& chunk, RecordType type, std::span<const uint8_t> payload) {
  chunk.push_back(static_cast<uint8_t>(type));
  uint64_t n = payload.size();
  do {
    uint8_t byte = n & 0x7f;
    n >>= 7;
    chunk.push_back(byte | (n ? 0x80 : 0));
  } while (n);
  chunk.insert(chunk.end(), payload.begin(), payload.end());
}

}  // namespace inprof::internal
