#include "dump/dump_records.h"

#include <cstring>

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
  // Older readers stop at library_version and ignore what follows.
  w.string(r.os_name);
  w.string(r.os_release);
  w.string(r.cpu_name);
  w.varint(r.physical_cpus);
  w.varint(r.logical_cpus);
  w.varint(r.memory_bytes);
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
  if (!r.string(out.library_version, kMaxStringSize)) return false;
  if (r.remaining() == 0) return true;  // written before the machine's facts were recorded
  return r.string(out.os_name, kMaxStringSize) && r.string(out.os_release, kMaxStringSize) &&
         r.string(out.cpu_name, kMaxStringSize) && r.varint(out.physical_cpus) &&
         r.varint(out.logical_cpus) && r.varint(out.memory_bytes);
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

void encode(ByteWriter& w, const ModuleImageRecord& r) {
  w.varint(r.id);
  w.bytes(r.bytes);
}

bool decode(ByteReader& r, ModuleImageRecord& out) {
  return r.varint(out.id) && r.bytes(out.bytes, kMaxModuleImageSize);
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

bool decode(ByteReader& r, ThreadEndRecord& out) {
  return r.varint(out.tid) && r.varint(out.time_ns);
}

namespace {

// A stack: flags, frames, leaf candidates, labels (FORMAT.md, "Stack records").
void encode_sample_stack(ByteWriter& w, uint32_t flags, std::span<const uint64_t> frames,
                         std::span<const LeafCandidate> candidates,
                         std::span<const SampleLabel> labels,
                         std::optional<SampleWait> wait = std::nullopt) {
  flags &= ~uint32_t{kSampleWait | kSampleWaitKind};
  if (wait) flags |= kSampleWait | (wait->object_kind != 0 ? uint32_t{kSampleWaitKind} : 0u);
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
  // Labels come next and only when present or a wait follows: a sample without either ends here.
  if (!labels.empty() || wait) {
    w.varint(labels.size());
    for (const auto& l : labels) {
      w.varint(l.position);
      w.varint(l.string_id);
      w.varint(l.category);
    }
  }
  if (wait) {
    w.varint(wait->call);
    w.varint(wait->object);
    if (wait->object_kind != 0) w.u8(wait->object_kind);
  }
}

}  // namespace

void encode_sample(ByteWriter& w, uint64_t tid, uint64_t time_ns,
                   std::optional<uint64_t> cpu_delta_ns, uint32_t flags,
                   std::span<const uint64_t> frames, std::span<const LeafCandidate> candidates,
                   std::span<const SampleLabel> labels, std::optional<SampleWait> wait) {
  w.varint(tid);
  w.varint(time_ns);
  put_optional(w, cpu_delta_ns);
  encode_sample_stack(w, flags, frames, candidates, labels, wait);
}

bool decode_stack(ByteReader& r, SampleRecord& out) {
  uint64_t count;
  if (!get_u32(r, out.flags) || !r.varint(count) || count > kMaxFrames) return false;
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
  out.labels.clear();
  out.wait.reset();
  const bool waits = (out.flags & kSampleWait) != 0;
  if (r.remaining() == 0 && !waits) return true;
  if (!r.varint(count) || count > kMaxLabels) return false;
  out.labels.resize(count);
  for (auto& l : out.labels) {
    if (!get_u32(r, l.position) || l.position > out.frames.size() || !r.varint(l.string_id) ||
        !get_u32(r, l.category)) {
      return false;
    }
  }
  if (waits) {
    SampleWait wait;
    if (!get_u32(r, wait.call) || !r.varint(wait.object)) return false;
    if ((out.flags & kSampleWaitKind) && !r.u8(wait.object_kind)) return false;
    out.wait = wait;
  }
  return true;
}

bool decode(ByteReader& r, SampleRecord& out) {
  out.stack_key = 0;
  return r.varint(out.tid) && r.varint(out.time_ns) && get_optional(r, out.cpu_delta_ns) &&
         decode_stack(r, out);
}

bool split_sample(std::span<const uint8_t> payload, SampleHead& head,
                  std::span<const uint8_t>& stack) {
  ByteReader r(payload);
  if (!r.varint(head.tid) || !r.varint(head.time_ns) || !get_optional(r, head.cpu_delta_ns)) {
    return false;
  }
  stack = payload.subspan(r.position());
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
  w.varint(r.markers_dropped);
  w.varint(r.samples_given_up);
  w.varint(r.profiler_cpu_ns);
  w.varint(r.sampler_cut_at_exit);
  for (uint64_t v : {r.time_ns, r.sampler_ticks, r.sampler_cpu_ns, r.tick_cpu_min_ns,
                     r.tick_cpu_max_ns, r.tick_interval_min_ns, r.tick_interval_max_ns,
                     r.rings_refused_allowance, r.rings_refused_permission, r.rings_refused_other,
                     r.activity_followed, r.sleep_stacks_unread}) {
    w.varint(v);
  }
}

bool decode(ByteReader& r, StatsRecord& out) {
  if (!r.varint(out.samples_recorded) || !r.varint(out.samples_dropped) ||
      !r.varint(out.threads_timed_out) || !r.varint(out.ticks_late)) {
    return false;
  }
  uint64_t* const optional_fields[] = {&out.markers_dropped,
                                       &out.samples_given_up,
                                       &out.profiler_cpu_ns,
                                       &out.sampler_cut_at_exit,
                                       &out.time_ns,
                                       &out.sampler_ticks,
                                       &out.sampler_cpu_ns,
                                       &out.tick_cpu_min_ns,
                                       &out.tick_cpu_max_ns,
                                       &out.tick_interval_min_ns,
                                       &out.tick_interval_max_ns,
                                       &out.rings_refused_allowance,
                                       &out.rings_refused_permission,
                                       &out.rings_refused_other,
                                       &out.activity_followed,
                                       &out.sleep_stacks_unread};
  for (uint64_t* field : optional_fields) *field = 0;
  // Older dumps end after any of the optional fields.
  for (uint64_t* field : optional_fields) {
    if (r.remaining() == 0) return true;
    if (!r.varint(*field)) return false;
  }
  return true;
}

void encode(ByteWriter& w, const EndRecord& r) { w.varint(r.time_ns); }

bool decode(ByteReader& r, EndRecord& out) { return r.varint(out.time_ns); }

void encode(ByteWriter& w, const ExecEndRecord& r) { w.varint(r.unix_ns); }

bool decode(ByteReader& r, ExecEndRecord& out) { return r.varint(out.unix_ns); }

void encode(ByteWriter& w, const LandedRecord& r) { w.varint(r.records); }

bool decode(ByteReader& r, LandedRecord& out) { return r.varint(out.records); }

void encode(ByteWriter& w, const CategoryRecord& r) {
  w.varint(r.id);
  w.u8(r.color);
  w.string(r.name);
}

bool decode(ByteReader& r, CategoryRecord& out) {
  return get_u32(r, out.id) && r.u8(out.color) && r.string(out.name, kMaxStringSize);
}

void encode(ByteWriter& w, const MarkerSchemaRecord& r) {
  w.varint(r.type);
  w.string(r.name);
  w.string(r.table_label);
  w.string(r.tooltip_label);
  w.string(r.chart_label);
  w.string(r.description);
  w.varint(r.fields.size());
  for (const auto& f : r.fields) {
    w.string(f.key);
    w.string(f.label);
    w.u8(f.format);
  }
}

bool decode(ByteReader& r, MarkerSchemaRecord& out) {
  uint64_t count;
  if (!get_u32(r, out.type) || !r.string(out.name, kMaxStringSize) ||
      !r.string(out.table_label, kMaxStringSize) || !r.string(out.tooltip_label, kMaxStringSize) ||
      !r.string(out.chart_label, kMaxStringSize) || !r.string(out.description, kMaxStringSize) ||
      !r.varint(count) || count > kMaxMarkerFields) {
    return false;
  }
  out.fields.resize(count);
  for (auto& f : out.fields) {
    if (!r.string(f.key, kMaxStringSize) || !r.string(f.label, kMaxStringSize) || !r.u8(f.format)) {
      return false;
    }
  }
  return true;
}

void encode_marker(ByteWriter& w, uint64_t tid, uint32_t category, uint8_t phase, uint64_t start_ns,
                   uint64_t end_ns, std::string_view name, uint32_t type,
                   std::span<const MarkerValueView> values) {
  // Encoded on the recording thread's hot path: one bounds check for the whole record instead of
  // one per field.
  size_t bound = 8 * 10 + 1 + name.size();
  for (const auto& v : values) bound += 11 + (v.kind == MarkerValue::kString ? v.string.size() : 0);
  uint8_t* p = w.reserve(bound);
  if (p == nullptr) return;
  put_varint(p, tid);
  put_varint(p, category);
  *p++ = phase;
  put_varint(p, start_ns);
  put_varint(p, end_ns >= start_ns ? end_ns - start_ns : 0);
  put_varint(p, name.size());
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  put_varint(p, type);
  put_varint(p, values.size());
  for (const auto& v : values) {
    *p++ = v.kind;
    switch (v.kind) {
      case MarkerValue::kInteger:
        put_varint(p, zigzag_encode(v.integer));
        break;
      case MarkerValue::kDecimal:
        std::memcpy(p, &v.decimal, sizeof(double));
        p += sizeof(double);
        break;
      default:
        put_varint(p, v.string.size());
        std::memcpy(p, v.string.data(), v.string.size());
        p += v.string.size();
        break;
    }
  }
  w.commit(p);
}

bool decode(ByteReader& r, MarkerRecord& out) {
  uint64_t duration, count;
  if (!r.varint(out.tid) || !get_u32(r, out.category) || !r.u8(out.phase) || out.phase > 3 ||
      !r.varint(out.start_ns) || !r.varint(duration) || !r.string(out.name, kMaxStringSize) ||
      !get_u32(r, out.type) || !r.varint(count) || count > kMaxMarkerFields) {
    return false;
  }
  out.end_ns = out.start_ns + duration;
  out.values.resize(count);
  for (auto& v : out.values) {
    if (!r.u8(v.kind)) return false;
    switch (v.kind) {
      case MarkerValue::kInteger:
        if (!r.svarint(v.integer)) return false;
        break;
      case MarkerValue::kDecimal: {
        auto bytes = r.take(sizeof(double));
        if (bytes.size() != sizeof(double)) return false;
        std::memcpy(&v.decimal, bytes.data(), sizeof(double));
        break;
      }
      case MarkerValue::kString:
        if (!r.string(v.string, kMaxStringSize)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

void encode(ByteWriter& w, const StringRecord& r) {
  w.varint(r.id);
  w.string(r.text);
}

bool decode(ByteReader& r, StringRecord& out) {
  return r.varint(out.id) && r.string(out.text, kMaxStringSize);
}

void encode(ByteWriter& w, const CounterRecord& r) {
  w.varint(r.id);
  w.varint(r.category);
  w.string(r.name);
  w.string(r.description);
}

bool decode(ByteReader& r, CounterRecord& out) {
  return get_u32(r, out.id) && get_u32(r, out.category) && r.string(out.name, kMaxStringSize) &&
         r.string(out.description, kMaxStringSize);
}

void encode(ByteWriter& w, const CounterSampleRecord& r) {
  w.varint(r.id);
  w.varint(r.time_ns);
  w.svarint(r.value);
}

bool decode(ByteReader& r, CounterSampleRecord& out) {
  return get_u32(r, out.id) && r.varint(out.time_ns) && r.svarint(out.value);
}

void encode(ByteWriter& w, const PauseRecord& r) { w.varint(r.time_ns); }

bool decode(ByteReader& r, PauseRecord& out) { return r.varint(out.time_ns); }

void encode(ByteWriter& w, const JitMapRecord& r) { w.string(r.text); }

bool decode(ByteReader& r, JitMapRecord& out) { return r.string(out.text, kMaxJitMapPiece); }

void encode(ByteWriter& w, const CaptureRecord& r) {
  w.varint(r.start_ns);
  w.varint(r.end_ns);
  w.u8(static_cast<uint8_t>(r.reason));
  w.varint(r.records_overwritten);
}

bool decode(ByteReader& r, CaptureRecord& out) {
  uint8_t reason = 0;
  if (!r.varint(out.start_ns) || !r.varint(out.end_ns) || !r.u8(reason) ||
      !r.varint(out.records_overwritten) || reason > 4) {
    return false;
  }
  out.reason = static_cast<CaptureReason>(reason);
  return true;
}

void encode_allocation(ByteWriter& w, uint64_t tid, uint64_t time_ns, uint64_t address,
                       uint64_t size, uint64_t weight, uint8_t kind, uint32_t flags,
                       std::span<const uint64_t> frames) {
  w.varint(tid);
  w.varint(time_ns);
  w.varint(address);
  w.varint(size);
  w.varint(weight);
  w.u8(kind);
  // The stack, as a stack record's (no leaf candidates).
  encode_sample_stack(w, flags, frames, {}, {});
}

bool decode(ByteReader& r, AllocationRecord& out) {
  if (!r.varint(out.tid) || !r.varint(out.time_ns) || !r.varint(out.address) ||
      !r.varint(out.size) || !r.varint(out.weight) || !r.u8(out.kind)) {
    return false;
  }
  SampleRecord stack;
  if (!decode_stack(r, stack)) return false;
  out.flags = stack.flags;
  out.frames = std::move(stack.frames);
  return true;
}

void encode(ByteWriter& w, const FreeRecord& r) {
  w.varint(r.tid);
  w.varint(r.time_ns);
  w.varint(r.address);
}

bool decode(ByteReader& r, FreeRecord& out) {
  return r.varint(out.tid) && r.varint(out.time_ns) && r.varint(out.address);
}

void encode(ByteWriter& w, const AllocationStatsRecord& r) {
  w.varint(r.sample_bytes);
  w.varint(r.sampled);
  w.varint(r.dropped);
  w.varint(r.untracked);
  w.varint(r.frees);
}

bool decode(ByteReader& r, AllocationStatsRecord& out) {
  return r.varint(out.sample_bytes) && r.varint(out.sampled) && r.varint(out.dropped) &&
         r.varint(out.untracked) && r.varint(out.frees);
}

std::optional<uint64_t> record_time(RecordType type, std::span<const uint8_t> payload) {
  ByteReader r(payload);
  uint64_t first = 0, time = 0;
  switch (type) {
    case RecordType::kSample:
    case RecordType::kSampleRepeat:
    case RecordType::kCounterSample:  // (tid or counter id, time, ...)
    case RecordType::kAllocation:
    case RecordType::kFree:
      if (r.varint(first) && r.varint(time)) return time;
      return std::nullopt;
    case RecordType::kMarker: {  // tid, category, phase, start, duration
      uint64_t category = 0, duration = 0;
      uint8_t phase = 0;
      if (r.varint(first) && r.varint(category) && r.u8(phase) && r.varint(time) &&
          r.varint(duration)) {
        return time + duration;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace inprof::internal
