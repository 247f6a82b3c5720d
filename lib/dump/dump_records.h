// The records of an inprof dump and their encoding. The byte layout is documented in FORMAT.md
// beside this file; change both together, and bump kDumpFormatVersion for any change an older
// reader would misread.
#ifndef INPROF_LIB_DUMP_DUMP_RECORDS_H_
#define INPROF_LIB_DUMP_DUMP_RECORDS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dump/byte_io.h"

namespace inprof::internal {

inline constexpr uint8_t kDumpMagic[8] = {0x89, 'I', 'N', 'P', 'R', 'O', 'F', '\n'};
inline constexpr uint32_t kDumpFormatVersion = 2;
// The oldest version this reader still reads (version 1 has no stack records: every sample is
// written whole).
inline constexpr uint32_t kOldestDumpFormatVersion = 1;
inline constexpr size_t kDumpHeaderSize = 16;  // magic, u32 version, u32 flags (little-endian)
// Header flag: the records follow uncompressed, framed as inside a chunk (a crash capture,
// written by a signal handler that can neither allocate nor compress).
inline constexpr uint32_t kDumpFlagRaw = 1;

// Limits a reader enforces, so a corrupt dump cannot ask for unbounded memory.
inline constexpr size_t kMaxStringSize = 64 << 10;
inline constexpr size_t kMaxBuildIdSize = 64;
inline constexpr size_t kMaxModuleImageSize = 64 << 10;
inline constexpr size_t kMaxFrames = 4096;
inline constexpr size_t kMaxLeafCandidates = 16;
inline constexpr size_t kMaxLabels = 256;
inline constexpr size_t kMaxMarkerFields = 64;
inline constexpr size_t kMaxJitMapPiece = 1 << 20;
// Per chunk (version 2): the stacks it defines and their frames in total, and the threads it
// names. The writer starts a new chunk before it would exceed them, so the tables on both sides
// stay bounded however long the session.
inline constexpr size_t kMaxStacksPerChunk = 1 << 16;
inline constexpr size_t kMaxStackFramesPerChunk = 1 << 20;
inline constexpr size_t kMaxThreadsPerChunk = 1 << 16;
// Stack samples and repeats carry times and CPU deltas in this unit (1 µs): the viewer shows
// milliseconds, and the nanoseconds below it are noise that compresses badly.
inline constexpr uint64_t kSampleTimeUnitNs = 1000;

enum class RecordType : uint8_t {
  kProcess = 1,
  kModuleLoad = 2,
  kModuleUnload = 3,
  kThreadStart = 4,
  kThreadName = 5,
  kThreadEnd = 6,
  kSample = 7,
  kSampleRepeat = 8,
  kStats = 9,
  kEnd = 10,
  kCategory = 11,
  kMarkerSchema = 12,
  kMarker = 13,
  kString = 14,
  kCounter = 15,
  kCounterSample = 16,
  kPause = 17,
  kResume = 18,
  kJitMap = 19,
  kCapture = 20,
  // Version 2: a chunk's distinct stacks, and its samples, column by column, referring to them
  // (FORMAT.md, "Compact samples").
  kStack = 21,
  kSampleBatch = 22,
  // A module's whole image, for a module with no file to read it from (the vDSO).
  kModuleImage = 23,
  // Allocations (docs/design/allocations.md): a sampled allocation with its stack, the free of a
  // recorded block, and the allocation counts. Older readers skip them.
  kAllocation = 24,
  kFree = 25,
  kAllocationStats = 26,
  // Written by the image that replaced this dump's process image (execve): no exit code ran, so
  // this stands for the end record. Older readers skip it (and report no end).
  kExecEnd = 27,
  // Written by `inprof record` after the process ended without stopping its session (`_exit`, a
  // signal): the records it had not yet written come before it, from the memory the launcher
  // kept (session/lifeboat.h); the end record follows. Older readers skip it.
  kLanded = 28,
};

struct ProcessRecord {
  uint64_t pid = 0;
  uint64_t start_unix_ns = 0;  // wall clock at the session's start; every other time is relative
  uint64_t interval_ns = 0;
  std::string arch;  // "x86_64", "aarch64"
  std::string os;    // "linux"
  std::string executable;
  std::vector<std::string> command_line;
  std::string library_version;
  // The machine (appended to the record; a dump without them reads as "unknown"). Empty or 0:
  // unknown.
  std::string os_name;         // the distribution or edition: "Debian GNU/Linux 12 (bookworm)"
  std::string os_release;      // the kernel's release / the OS version: "6.1.0-27-amd64"
  std::string cpu_name;        // "AMD EPYC 7B13"
  uint64_t physical_cpus = 0;  // cores
  uint64_t logical_cpus = 0;   // hardware threads online
  uint64_t memory_bytes = 0;   // physical memory
};

enum ModuleFlags : uint32_t {
  kModuleMainExecutable = 1 << 0,
  kModuleVdso = 1 << 1,
};

struct ModuleRecord {
  uint64_t id = 0;  // unique within the dump; unload records refer to it
  uint64_t time_ns = 0;
  uint64_t start = 0;  // lowest and one past the highest address of its loaded segments
  uint64_t end = 0;
  uint64_t load_bias = 0;    // runtime address minus ELF virtual address
  uint64_t file_offset = 0;  // file offset of the segment mapped at `start`
  uint32_t flags = 0;
  std::string path;
  std::vector<uint8_t> build_id;  // GNU build-id, empty if the module has none
};

struct ModuleUnloadRecord {
  uint64_t id = 0;
  uint64_t time_ns = 0;
};

enum ThreadFlags : uint32_t {
  kThreadMain = 1 << 0,
};

struct ThreadRecord {  // kThreadStart and kThreadName
  uint64_t tid = 0;
  uint64_t time_ns = 0;
  uint32_t flags = 0;
  std::string name;
};

struct ThreadEndRecord {
  uint64_t tid = 0;
  uint64_t time_ns = 0;
};

enum SampleFlags : uint32_t {
  kSampleTruncatedCopy = 1 << 0,     // the stack was deeper than the copy
  kSampleDepthLimit = 1 << 1,        // max_frames was reached
  kSampleNoStack = 1 << 2,           // registers only: the stack could not be located
  kSampleFramePointerWalk = 1 << 3,  // frames come from a frame-pointer walk (leaf fix-up applies)
  kSampleIncomplete = 1 << 4,        // the walk stopped before a recognised outermost frame
  kSampleOnCpu = 1 << 5,  // taken while the thread ran (a kernel ring's or a CPU timer's)
  // Taken of the thread asleep, where the CPU time it or its repeats carry was run where no
  // snapshot saw it (bursts its CPU timer's expirations missed): shown under a frame that says
  // so, never as the sleeping stack's own CPU.
  kSampleRanUnseen = 1 << 6,
  // Taken of the thread asleep in a system call: the stack ends with the call and what it waits
  // on (SampleWait), after the labels (whose count is then always written).
  kSampleWait = 1 << 7,
  // With kSampleWait: the wait's descriptor kind follows it (one byte; SampleWait::object_kind).
  kSampleWaitKind = 1 << 8,
};

// Where a sleeping thread waits: the system call it is blocked in (the architecture's number)
// and that call's first argument, which names what it waits on for the calls that wait on
// something (a futex's address, a descriptor, an epoll set's descriptor); for a descriptor, what
// it was when the sample was taken (DescriptorKind, stack_snapshot.h; 0: not known).
struct SampleWait {
  uint32_t call = 0;
  uint64_t object = 0;
  uint8_t object_kind = 0;
  bool operator==(const SampleWait&) const = default;
};

// A word from the top of the sampled stack that points into executable code: the return
// address of a frameless leaf is one of these. symbolicate decides, from the leaf's CFI, whether
// to insert it (see FORMAT.md, "leaf fix-up").
struct LeafCandidate {
  uint8_t slot = 0;  // word index above SP, or kLeafCandidateLinkRegister
  uint64_t value = 0;
};
// A candidate that is the link register's value (aarch64), not a word of the stack.
inline constexpr uint8_t kLeafCandidateLinkRegister = 255;

// A label (inprof::LabelScope) active in a sample, placed among its frames.
struct SampleLabel {
  uint32_t position = 0;   // it sits just before frames[position] (leaf-first order)
  uint64_t string_id = 0;  // a kString record
  uint32_t category = 0;
};

struct SampleRecord {
  uint64_t tid = 0;
  uint64_t time_ns = 0;
  std::optional<uint64_t> cpu_delta_ns;  // thread CPU time since its previous sample
  uint32_t flags = 0;
  std::vector<uint64_t> frames;  // [0] = PC of the leaf, then return addresses, outermost last
  std::vector<LeafCandidate> leaf_candidates;
  std::vector<SampleLabel> labels;
  std::optional<SampleWait> wait;  // kSampleWait
  // Set by the reader for a sample of a sample batch: every sample that refers to the same stack
  // record gets the same key (unique within one read), so a consumer can skip comparing frames.
  // 0 for a sample written whole.
  uint64_t stack_key = 0;
};

struct SampleRepeatRecord {  // same stack as the thread's previous sample
  uint64_t tid = 0;
  uint64_t time_ns = 0;
  std::optional<uint64_t> cpu_delta_ns;
};

struct StatsRecord {               // cumulative; the last one in a dump counts
  uint64_t samples_recorded = 0;   // samples and repeats written to the buffer
  uint64_t samples_dropped = 0;    // lost because the buffer was full
  uint64_t threads_timed_out = 0;  // sampling attempts skipped: the thread did not answer
  uint64_t ticks_late = 0;         // ticks the sampler could not keep (overrun)
  uint64_t markers_dropped = 0;    // lost because the buffer was full
  // Ticks that found a thread on a CPU that could not be sampled without disturbing it (it
  // blocks the sampling signal, runs under seccomp, the program took the signal, no timer free).
  uint64_t samples_given_up = 0;
  // CPU time the profiler's own threads (sampler, writer) have used so far: what it cost.
  uint64_t profiler_cpu_ns = 0;
  // 1: the process exited while the sampler had no CPU (the program's threads kept every CPU
  // busy); what it had not collected by then (at most one tick's samples) is not in the dump.
  uint64_t sampler_cut_at_exit = 0;
  // Since the profiler's overhead is recorded (older dumps end before; 0: unknown): when these
  // figures were taken (ns since the session start), the sampler's ticks so far, its share of
  // profiler_cpu_ns, and the least and most CPU one tick took and time between two ticks' starts.
  uint64_t time_ns = 0;
  uint64_t sampler_ticks = 0;
  uint64_t sampler_cpu_ns = 0;
  uint64_t tick_cpu_min_ns = 0;
  uint64_t tick_cpu_max_ns = 0;
  uint64_t tick_interval_min_ns = 0;
  uint64_t tick_interval_max_ns = 0;
  // Kernel sampling rings refused since the process started (sampling/kernel_ring_refusals.h):
  // charged to the program's locked-memory limit (the user's perf allowance was used up), not
  // permitted, other. And whether the kernel's records followed the threads' activity: 0
  // unknown (older dumps), 1 yes, 2 no (idle threads were asked by their clocks).
  uint64_t rings_refused_allowance = 0;
  uint64_t rings_refused_permission = 0;
  uint64_t rings_refused_other = 0;
  uint64_t activity_followed = 0;
  // Threads that ended before the sampler read again where they slept after their last wake
  // (its budget for reads again, sampling/reread_pacer.h: a wake storm): their last wait is
  // counted in the one before it.
  uint64_t sleep_stacks_unread = 0;
};

struct EndRecord {
  uint64_t time_ns = 0;
};

struct ExecEndRecord {
  uint64_t unix_ns = 0;  // wall clock when the next image found this dump (after the exec)
};

struct LandedRecord {
  uint64_t records = 0;  // taken from the process's journal and ring after its last chunk
};

struct CategoryRecord {
  uint32_t id = 0;
  uint8_t color = 0;  // inprof::Color
  std::string name;
};

struct MarkerFieldRecord {
  std::string key;
  std::string label;
  uint8_t format = 0;  // inprof::Format
};

struct MarkerSchemaRecord {
  uint32_t type = 0;  // > 0; markers refer to it
  std::string name;
  std::string table_label, tooltip_label, chart_label, description;
  std::vector<MarkerFieldRecord> fields;
};

struct MarkerValue {
  enum Kind : uint8_t { kInteger = 0, kDecimal = 1, kString = 2 };
  uint8_t kind = kInteger;
  int64_t integer = 0;
  double decimal = 0;
  std::string string;
};

struct MarkerRecord {
  uint64_t tid = 0;
  uint32_t category = 0;
  uint8_t phase = 0;  // 0 instant, 1 interval, 2 interval start, 3 interval end
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;  // = start_ns except for intervals
  std::string name;
  uint32_t type = 0;                // 0: no payload
  std::vector<MarkerValue> values;  // one per field of the type
};

struct StringRecord {
  uint64_t id = 0;
  std::string text;
};

struct CounterRecord {
  uint32_t id = 0;
  uint32_t category = 0;
  std::string name;
  std::string description;
};

struct CounterSampleRecord {
  uint32_t id = 0;
  uint64_t time_ns = 0;
  int64_t value = 0;
};

struct PauseRecord {  // kPause and kResume
  uint64_t time_ns = 0;
};

// A piece of the process's JIT symbol map (perf's /tmp/perf-<pid>.map: lines "START SIZE name",
// hex), copied at stop because the file may be gone when symbolicate runs. Long maps come in
// several records, each ending on a line boundary.
// What a flight-recorder capture covers: the dump holds the session's records from `start_ns` to
// `end_ns` only (the ring had overwritten older ones, or `ring_seconds` cut them).
// kRotation: one window of a rotating stream (Options::rotate_interval), not a flight recorder's.
enum class CaptureReason : uint8_t {
  kRequest = 0,
  kSignal = 1,
  kStop = 2,
  kCrash = 3,
  kRotation = 4
};
struct CaptureRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  CaptureReason reason = CaptureReason::kRequest;
  uint64_t records_overwritten = 0;  // cumulative, since the session started
};

struct JitMapRecord {
  std::string text;
};

// The bytes of a module that has no file (the vDSO: a few KiB, its ELF image as the kernel maps
// it), so that a reader can name its functions from its symbol table.
struct ModuleImageRecord {
  uint64_t id = 0;  // the module's (its load record's id)
  std::vector<uint8_t> bytes;
};

// A sampled allocation. Its stack is the allocating code's: frames[0] is the call into the
// allocator (its return address minus one), then return addresses, outermost last.
struct AllocationRecord {
  uint64_t tid = 0;
  uint64_t time_ns = 0;  // nanoseconds since the session's start
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t weight = 0;  // the bytes it stands for (the sampling's unbiased estimate)
  uint8_t kind = 0;     // 0 malloc, 1 calloc, 2 realloc, 3 aligned, 4 new, 5 new[]
  uint32_t flags = 0;   // SampleFlags, plus kAllocationCallerNotFound
  std::vector<uint64_t> frames;
};
// The allocator's caller was not found in the walk: the stack is the call into the allocator
// alone (with kSampleIncomplete). Dumps before session 14 kept the whole walk instead.
inline constexpr uint32_t kAllocationCallerNotFound = 1u << 6;

// A recorded block was freed (or moved by realloc).
struct FreeRecord {
  uint64_t tid = 0;
  uint64_t time_ns = 0;
  uint64_t address = 0;
};

struct AllocationStatsRecord {  // cumulative; the last one counts
  uint64_t sample_bytes = 0;    // mean bytes between samples; 1: every allocation
  uint64_t sampled = 0;         // allocations recorded
  uint64_t dropped = 0;         // sampled but lost: no free slot, or the buffer was full
  uint64_t untracked = 0;       // recorded, but their frees cannot be seen (address set full)
  uint64_t frees = 0;           // frees of recorded blocks
};

// Payload encoders. Each writes one record's payload (no type or size) into `w`.
void encode(ByteWriter& w, const ProcessRecord& r);
void encode(ByteWriter& w, const ModuleRecord& r);
void encode(ByteWriter& w, const ModuleImageRecord& r);
void encode(ByteWriter& w, const ModuleUnloadRecord& r);
void encode(ByteWriter& w, const ThreadRecord& r);
void encode(ByteWriter& w, const ThreadEndRecord& r);
void encode(ByteWriter& w, const SampleRepeatRecord& r);
void encode(ByteWriter& w, const StatsRecord& r);
void encode(ByteWriter& w, const EndRecord& r);
void encode(ByteWriter& w, const ExecEndRecord& r);
void encode(ByteWriter& w, const LandedRecord& r);
void encode(ByteWriter& w, const CategoryRecord& r);
void encode(ByteWriter& w, const MarkerSchemaRecord& r);
void encode(ByteWriter& w, const StringRecord& r);
void encode(ByteWriter& w, const CounterRecord& r);
void encode(ByteWriter& w, const CounterSampleRecord& r);
void encode(ByteWriter& w, const PauseRecord& r);
void encode(ByteWriter& w, const JitMapRecord& r);
void encode(ByteWriter& w, const CaptureRecord& r);
void encode(ByteWriter& w, const FreeRecord& r);
void encode(ByteWriter& w, const AllocationStatsRecord& r);
// Without allocating: the sampler encodes from its scratch frames.
void encode_allocation(ByteWriter& w, uint64_t tid, uint64_t time_ns, uint64_t address,
                       uint64_t size, uint64_t weight, uint8_t kind, uint32_t flags,
                       std::span<const uint64_t> frames);
// The sample encoder takes spans so the sampler can encode without allocating.
void encode_sample(ByteWriter& w, uint64_t tid, uint64_t time_ns,
                   std::optional<uint64_t> cpu_delta_ns, uint32_t flags,
                   std::span<const uint64_t> frames, std::span<const LeafCandidate> candidates,
                   std::span<const SampleLabel> labels = {},
                   std::optional<SampleWait> wait = std::nullopt);
// Markers are encoded by the thread that records them, without allocating: string fields go
// straight from the caller's views. `values` are (kind, integer, decimal, string) per field.
struct MarkerValueView {
  uint8_t kind;
  int64_t integer;
  double decimal;
  std::string_view string;
};
void encode_marker(ByteWriter& w, uint64_t tid, uint32_t category, uint8_t phase, uint64_t start_ns,
                   uint64_t end_ns, std::string_view name, uint32_t type,
                   std::span<const MarkerValueView> values);

// A sample's payload is its head (tid, time, CPU delta) then its stack (flags, frames, leaf
// candidates, labels); a stack record's payload is that stack alone. Splits a sample (or
// repeat: its stack is empty) payload without allocating; false if the head is malformed.
struct SampleHead {
  uint64_t tid = 0;
  uint64_t time_ns = 0;
  std::optional<uint64_t> cpu_delta_ns;
};
bool split_sample(std::span<const uint8_t> payload, SampleHead& head,
                  std::span<const uint8_t>& stack);
// Decodes a stack (the part after the head) into `out`'s flags, frames, candidates and labels.
bool decode_stack(ByteReader& r, SampleRecord& out);

// Payload decoders: false if the payload is malformed or exceeds the limits above.
bool decode(ByteReader& r, ProcessRecord& out);
bool decode(ByteReader& r, ModuleRecord& out);
bool decode(ByteReader& r, ModuleImageRecord& out);
bool decode(ByteReader& r, ModuleUnloadRecord& out);
bool decode(ByteReader& r, ThreadRecord& out);
bool decode(ByteReader& r, ThreadEndRecord& out);
bool decode(ByteReader& r, SampleRecord& out);
bool decode(ByteReader& r, SampleRepeatRecord& out);
bool decode(ByteReader& r, StatsRecord& out);
bool decode(ByteReader& r, EndRecord& out);
bool decode(ByteReader& r, ExecEndRecord& out);
bool decode(ByteReader& r, LandedRecord& out);
bool decode(ByteReader& r, CategoryRecord& out);
bool decode(ByteReader& r, MarkerSchemaRecord& out);
bool decode(ByteReader& r, MarkerRecord& out);
bool decode(ByteReader& r, StringRecord& out);
bool decode(ByteReader& r, CounterRecord& out);
bool decode(ByteReader& r, CounterSampleRecord& out);
bool decode(ByteReader& r, PauseRecord& out);
bool decode(ByteReader& r, JitMapRecord& out);
bool decode(ByteReader& r, CaptureRecord& out);
bool decode(ByteReader& r, AllocationRecord& out);
bool decode(ByteReader& r, FreeRecord& out);
bool decode(ByteReader& r, AllocationStatsRecord& out);

// The time of a record that the ring buffer carries (sample, repeat, marker — its end —, counter
// sample), without allocating; nothing for other types or a malformed payload.
std::optional<uint64_t> record_time(RecordType type, std::span<const uint8_t> payload);

// Appends a framed record (type, varint payload size, payload) to a chunk.
template <class Allocator>
void append_record(std::vector<uint8_t, Allocator>& chunk, RecordType type,
                   std::span<const uint8_t> payload) {
  chunk.push_back(static_cast<uint8_t>(type));
  append_varint(chunk, payload.size());
  chunk.insert(chunk.end(), payload.begin(), payload.end());
}

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_DUMP_RECORDS_H_
