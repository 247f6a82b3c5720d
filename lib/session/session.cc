#include "session/session.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "allocations/allocation_recorder.h"
#include "api/copies.h"
#include "inprof/markers.h"
#include "markers/declarations.h"
#include "markers/marker_recorder.h"
#include "memory/large_alloc.h"
#include "options/option_limits.h"
#include "session/chunk_flush.h"
#include "session/process_info.h"
#include "session/stop_trigger.h"
#include "session/system_facts.h"
#include "threads/profiler_threads.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/frame_pointer_unwinder.h"
#include "unwind/os_unwinder.h"

namespace inprof::internal {
namespace {

// Rings outlive their sessions (see Session::ring_); keeping them listed here makes that a
// deliberate, bounded retention (a few hundred bytes per session, storage released) rather than
// an unreachable leak.
void retire(RingBuffer* ring) {
  static std::mutex* mutex = new std::mutex;
  static std::vector<RingBuffer*>* retired = new std::vector<RingBuffer*>;
  std::lock_guard lock(*mutex);
  retired->push_back(ring);
}

// A sampler left running at exit (Session::leaked_at_exit) works on until the process ends: kept
// listed, so that a leak checker sees it, and all it owns, in use, as they are.
void keep_running(Sampler* sampler) {
  static std::mutex* mutex = new std::mutex;
  static std::vector<Sampler*>* running = new std::vector<Sampler*>;
  std::lock_guard lock(*mutex);
  running->push_back(sampler);
}

// The dump of the image this process replaced (execve) ends without its end record, no exit code
// having run there: the record that stands for it goes after what that image wrote.
void end_earlier_image(const std::string& path) {
  auto file = OutputFile::append(path);
  if (!file) return;
  auto dump = DumpWriter::append_to(std::move(file));
  dump->add(RecordType::kExecEnd, ExecEndRecord{wall_clock_ns()});
  (void)dump->close();
}

Status invalid(const std::string& message) {
  return Status::error(Status::Code::kInvalidOption, message);
}

// "app.inprof" + "-crash" -> "app-crash.inprof"; a path without an extension gets ".inprof".
std::string derived_path(const std::string& path, const std::string& suffix) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == 0 ||
      dot == slash + 1) {
    return path + suffix + ".inprof";
  }
  return path.substr(0, dot) + suffix + path.substr(dot);
}

// The crash marker's payload (written by CrashWriter without allocating).
constexpr MarkerField kCrashFields[] = {{"signal", "Signal", Format::kString},
                                        {"code", "si_code", Format::kInteger},
                                        {"address", "Address", Format::kString}};

}  // namespace

Status validate(const Options& o) {
  using std::chrono::nanoseconds;
  if (o.interval < kMinInterval || o.interval > kMaxInterval) {
    return invalid("interval must be between 100 µs and 1 s (got " +
                   std::to_string(o.interval.count()) + " ns)");
  }
  if (o.buffer_size < kMinBufferSize || o.buffer_size > kMaxBufferSize) {
    return invalid("buffer_size must be between 64 KiB and 1 GiB (got " +
                   std::to_string(o.buffer_size) + " bytes)");
  }
  if (o.stack_copy_size < kMinStackCopySize || o.stack_copy_size > kMaxStackCopySize) {
    return invalid("stack_copy_size must be between 4 KiB and 1 MiB (got " +
                   std::to_string(o.stack_copy_size) + " bytes)");
  }
  if (o.max_frames < kMinMaxFrames || o.max_frames > kMaxMaxFrames) {
    return invalid("max_frames must be between " + std::to_string(kMinMaxFrames) + " and " +
                   std::to_string(kMaxMaxFrames) + " (got " + std::to_string(o.max_frames) + ")");
  }
  if (o.thread_answer_timeout < std::chrono::microseconds(100) ||
      o.thread_answer_timeout > std::chrono::seconds(1)) {
    return invalid("thread_answer_timeout must be between 100 µs and 1 s");
  }
  if (o.mode != Mode::kRing) {
    if (o.capture_signal != 0) return invalid("capture_signal needs mode = Mode::kRing");
    if (o.crash_capture) return invalid("crash_capture needs mode = Mode::kRing");
    if (o.ring_seconds.count() != 0) return invalid("ring_seconds needs mode = Mode::kRing");
  }
  if (o.ring_seconds.count() < 0 || o.ring_seconds > kMaxRingSeconds) {
    return invalid("ring_seconds must be between 0 and a year");
  }
  if (o.rotate_interval.count() != 0) {
    if (o.mode != Mode::kStream) return invalid("rotate_interval needs mode = Mode::kStream");
    if (o.rotate_interval < std::chrono::milliseconds(100) ||
        o.rotate_interval > std::chrono::duration_cast<nanoseconds>(kMaxRingSeconds)) {
      return invalid("rotate_interval must be 0 or between 100 ms and a year");
    }
  } else if (o.keep_files != 0) {
    return invalid("keep_files needs rotate_interval");
  }
  if (o.allocation_sample_bytes > kMaxAllocationSampleBytes) {
    return invalid("allocation_sample_bytes must be at most 1 TiB (0: off)");
  }
  return {};
}

Session::Session(const Options& options, uint64_t start_ns, bool taps_only)
    : options_(options),
      start_ns_(start_ns),
      ring_mode_(options.mode == Mode::kRing),
      taps_only_(taps_only),
      ring_(new RingBuffer(options.buffer_size, ring_mode_ ? RingBuffer::WhenFull::kOverwrite
                                                           : RingBuffer::WhenFull::kDrop)),
      // A rotating stream keeps the metadata too, for every window to start with.
      metadata_(!ring_mode_ && options.rotate_interval.count() == 0 ? MetadataQueue::Mode::kTake
                : options.crash_capture ? MetadataQueue::Mode::kRetainWithCrashImage
                                        : MetadataQueue::Mode::kRetain),
      rotating_(options.rotate_interval.count() != 0) {}

std::unique_ptr<Session> Session::start(const Options& options, Status* status, bool taps_only) {
  *status = validate(options);
  if (!status->ok()) return nullptr;
  if (options.allocation_sample_bytes != 0 && !AllocationRecorder::instance().find_hooks()) {
    *status = Status::error(Status::Code::kPlatformError,
                            "allocation_sample_bytes needs the allocation interposer: link "
                            "inprof::allocations or preload libinprof_allocations.so");
    return nullptr;
  }

  // The signal first: if it is taken, no file is created.
  auto copier = StackCopier::create(
      StackCopier::Config{options.sample_signal, options.thread_answer_timeout, options.interval,
                          options.stack_copy_size, options.cpu_samples},
      status);
  if (!copier) return nullptr;

  if (taps_only && options.mode != Mode::kStream) {
    *status = invalid("a session for record taps streams (mode = Mode::kStream)");
    return nullptr;
  }
  std::unique_ptr<Session> session(new Session(options, monotonic_ns(), taps_only));
  if (!taps_only && !session->open_output(status)) return nullptr;
  session->record_process();
  session->create_sampler(std::move(copier));
  if (session->ring_mode_) {
    *status = session->start_ring_services(session->output_path_);
    if (!status->ok()) return nullptr;
  }
  if (!session->start_threads(status)) return nullptr;
  if (!session->attach_recorders(status)) return nullptr;
  g_recording.store(true);
  session->started_ = true;
  *status = {};
  return session;
}

bool Session::open_output(Status* status) {
  const std::string output_path = options_.output_path.empty()
                                      ? "inprof-" + std::to_string(process_id()) + ".inprof"
                                      : options_.output_path;
  if (options_.rotate_interval.count() != 0) {
    window_files_ = std::make_unique<WindowFiles>(output_path, options_.keep_files, process_id());
  }
  std::string earlier_image;
  auto file = OutputFile::create_unshared(
      window_files_ ? window_files_->path(1, wall_clock_ns()) : output_path, status, &output_path_,
      &earlier_image);
  if (!file) return false;
  if (!earlier_image.empty()) end_earlier_image(earlier_image);
  if (ring_mode_) {
    // Nothing is written until a capture or stop(); the file is created now so that a path that
    // cannot be written is reported by start().
    final_capture_ = std::move(file);
    return true;
  }
  dump_ = DumpWriter::create(std::move(file), status);
  if (!dump_) return false;
  if (!rotating_) {
    lifeboat_ = Lifeboat::launch(ring_->capacity(), dump_->file().descriptor(), dump_->written(),
                                 start_ns_);
    // No producer has the ring yet: it moves into the boat. The first one is retired as every
    // ring is, not deleted (made by an aligned new, it may come from an allocator the program's
    // free() does not know).
    if (lifeboat_) {
      ring_->release_storage();
      retire(ring_);
      ring_ = new RingBuffer(lifeboat_->ring_storage(), RingBuffer::WhenFull::kDrop);
    }
  }
  return true;
}

void Session::record_process() {
  ProcessRecord process;
  process.pid = process_id();
  process.start_unix_ns = wall_clock_ns();
  process.interval_ns = static_cast<uint64_t>(options_.interval.count());
  process.arch = kArchName;
  process.os = os_name();
  process.executable = executable_path();
  process.command_line = command_line();
  process.library_version = INPROF_VERSION_STRING;
  read_system_facts(process);
  if (ring_mode_ || rotating_) {
    metadata_.push(RecordType::kProcess, process);  // first of what every capture (window) holds
  } else if (dump_) {
    dump_->add(RecordType::kProcess, process);
  }
}

void Session::create_sampler(std::unique_ptr<StackCopier> copier) {
  SamplerConfig config;
  config.interval_ns = static_cast<uint64_t>(options_.interval.count());
  config.max_frames = options_.max_frames;
  config.stack_copy_size = options_.stack_copy_size;
  config.start_ns = start_ns_;
  config.thread_filters = options_.thread_filters;
  config.cpu_samples = options_.cpu_samples;
  config.answer_timeout_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.thread_answer_timeout).count());
  std::unique_ptr<Unwinder> unwinder;
  if (options_.unwinder == UnwindMethod::kFramePointer) {
    unwinder = std::make_unique<FramePointerUnwinder>();
  } else {
#if defined(INPROF_OS_UNWINDER)
    unwinder = create_os_unwinder();  // Windows: no CFI of ours; the OS's unwind tables
#else
    unwinder = std::make_unique<DwarfUnwinder>(CfiProvider::create(),
                                               options_.unwinder == UnwindMethod::kAuto);
#endif
  }
  sampler_ =
      std::make_unique<Sampler>(config, std::move(copier), std::move(unwinder),
                                ThreadLister::create(), ModuleLister::create(), *ring_, metadata_);
  if (options_.allocation_sample_bytes != 0) {
    allocation_pool_ = std::make_unique<AllocationPool>(
        kAllocationSlots, std::min<size_t>(options_.stack_copy_size, kAllocationStackBytes));
    sampler_->set_allocation_pool(allocation_pool_.get());
  }
  // A main() that ended in pthread_exit(): when its last thread ends, the C library would call
  // exit(0), but our threads keep the process alive. A thread of ours does what the library
  // would have: the dump is completed, then exit(0) (atexit handlers and destructors run).
  sampler_->set_program_ended([] {
    std::thread([] {
      ProfilerThreadMark mark;
      (void)here::stop();
      std::exit(0);
    }).detach();
  });
}

bool Session::start_threads(Status* status) {
  // Before any thread of the session starts: the writer reads it for every stats record.
  markers_dropped_at_start_ = MarkerRecorder::instance().dropped();
  if (!ring_mode_ && !start_writer_thread()) {
    refuse_start(status);
    return false;
  }
  std::promise<void> sampler_ready;
  auto sampler_ready_done = sampler_ready.get_future();
  // Every thread this one creates once start() returns is followed by the kernel's records of
  // when it runs (where it keeps them): a preloaded session starts on the main thread, before
  // the program has any other.
  const uint64_t starter = current_thread_id();
  const bool sampler_started =
      sampler_thread_.start("inprof-sampler", [this, &sampler_ready, starter] {
        // What it opens (/proc, perf events) never takes a number the program expects.
        (void)use_private_descriptor_table(-1);
        AllocationRecorder::instance().exclude_this_thread();
        sampler_->exclude_thread(current_thread_id());
        if (options_.cpu_samples) {
          const bool followed = sampler_->watch_activity(starter);
          activity_followed_.store(followed ? 1 : 2, std::memory_order_relaxed);
        }
        if (allocation_pool_) sampler_->prepare_modules();
        sampler_ready.set_value();
        sampler_->run();
      });
  if (!sampler_started) {
    refuse_start(status);
    return false;
  }
  sampler_ready_done.wait();
  return true;
}

bool Session::start_writer_thread() {
  sampler_->set_ring_filling([this] {
    // Without writer_mutex_ (the writer holds it while it drains): a wake-up lost between its
    // check and its wait is repeated at the next tick, the ring being still as full.
    drain_requested_.store(true, std::memory_order_relaxed);
    writer_cv_.notify_one();
  });
  // The writer starts first so that the sampler knows its id and never samples it.
  std::promise<uint64_t> writer_tid;
  auto writer_tid_ready = writer_tid.get_future();
  std::atomic<bool> writer_table_private{false};
  const bool writer_started =
      writer_thread_.start("inprof-writer", [this, &writer_tid, &writer_table_private] {
        // Its files (the dump, rotation windows, the JIT map it copies) live in a table of its
        // own.
        writer_table_private =
            use_private_descriptor_table(dump_ ? dump_->file().descriptor() : -1);
        AllocationRecorder::instance().exclude_this_thread();
        writer_tid.set_value(current_thread_id());
        writer_loop();
      });
  if (!writer_started) return false;
  sampler_->exclude_thread(writer_tid_ready.get());
  // The dump is the writer's alone now: the program's table keeps no copy of it.
  if (writer_table_private && dump_) dump_->file().moved_to_private_table();
  return true;
}

bool Session::attach_recorders(Status* status) {
  // Markers, categories and counters flow into this session from now on.
  Declarations::instance().attach(&metadata_);
  MarkerRecorder::instance().attach(ring_, start_ns_);
  if (allocation_pool_ &&
      !AllocationRecorder::instance().attach(
          ring_, allocation_pool_.get(), start_ns_, options_.allocation_sample_bytes,
          options_.allocation_sample_bytes == 1 ? kTrackedAtEveryAllocation : kTrackedSampled)) {
    *status = Status::error(Status::Code::kPlatformError,
                            "the allocation interposer refused the session (a different build "
                            "of libinprof_allocations?)");
    started_ = true;
    (void)stop();
    return false;
  }
  return true;
}

void Session::refuse_start(Status* status) {
  *status = Status::error(Status::Code::kPlatformError,
                          "the system refused a thread for the profiler (too many threads, or no "
                          "memory)");
  started_ = true;
  (void)stop();
}

Status Session::start_ring_services(const std::string& output_path) {
  Status status;
  if (options_.crash_capture) {
    static const uint32_t crash_marker_type =
        Declarations::instance().register_marker_type(MarkerSchemaDescription{
            "Crash", kCrashFields, "{marker.data.signal} at {marker.data.address}",
            "{marker.data.signal} at {marker.data.address}", "",
            "The process crashed here (inprof crash capture)"});
    crash_writer_ = std::make_unique<CrashWriter>(*ring_, metadata_, crash_marker_type, start_ns_);
    const std::string crash_path =
        options_.crash_path.empty() ? derived_path(output_path, "-crash") : options_.crash_path;
    sampler_->enable_crash_samples();
    crash_handler_ = CrashHandler::install(crash_path, crash_writer_.get(), sampler_.get(), &status,
                                           ring_mode_ ? output_path : std::string());
    if (!crash_handler_) return status;
  }
  if (options_.capture_signal != 0) {
    capture_trigger_ = SignalTrigger::create(
        options_.capture_signal, "inprof-capture",
        [this] {
          const std::string path =
              derived_path(output_path_, "-capture-" + std::to_string(++signal_captures_));
          (void)capture(path, CaptureReason::kSignal);
        },
        &status);
    if (!capture_trigger_) {
      crash_handler_.reset();
      return status;
    }
  }
  return {};
}

Session::~Session() { (void)stop(); }

Status Session::stop(bool at_exit) {
  if (stopped_) return write_status_;
  stopped_ = true;
  g_recording.store(false);
  MarkerRecorder::instance().detach();
  Declarations::instance().detach();
  // The dump signal is the program's again from here on (this may be that trigger's own stop).
  disarm_stop_trigger();
  // Allocation records stop here; the sampler's last drain takes those still in the pool.
  if (allocation_pool_) AllocationRecorder::instance().detach();
  // Waits for a capture the signal started; from here on no crash is written either.
  capture_trigger_.reset();
  crash_handler_.reset();
  if (sampler_thread_.joinable()) {
    sampler_->request_stop();
    // At exit, its last collection (at most what the rings and timers took since its last tick)
    // may be given up: counted in the stats.
    if (at_exit && !wait_at_exit(sampler_thread_, [this](uint64_t timeout_ns) {
          return sampler_->wait_finished(timeout_ns);
        })) {
      sampler_abandoned_.store(true, std::memory_order_relaxed);
      sampler_thread_.detach();
    } else {
      sampler_thread_.join();
    }
  }
  if (ring_mode_ && started_) {
    // Marker writers already inside finish what they reserved; later ones are refused.
    ring_->close();
    wait_all_published([] {}, 100000);
    if (final_capture_)
      write_status_ = write_capture(std::move(final_capture_), CaptureReason::kStop);
  }
  if (writer_thread_.joinable() && at_exit) {
    // The writer's last drain, done here rather than by waking it: where the program's threads
    // keep every CPU busy, the writer (which used more than its share) ran again only 50-400 ms
    // later. This thread has the CPU now. writer_mutex_ is free unless the writer is draining,
    // which it then finishes first; the dump's descriptor is in the writer's private table, so
    // the dump is opened again by its path here, for these last writes (output_file.h).
    {
      std::lock_guard lock(writer_mutex_);
      writer_stop_ = true;
      final_drain_done_ = true;
      drain(true);
    }
    writer_cv_.notify_all();
    // It has nothing left to do but see writer_stop_; given up only if it gets no CPU for it.
    if (wait_at_exit(writer_thread_, [this](uint64_t timeout_ns) {
          std::unique_lock lock(writer_mutex_);
          return writer_cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns),
                                     [this] { return writer_finished_; });
        })) {
      writer_thread_.join();
    } else {
      writer_thread_.detach();
      writer_detached_ = true;
    }
  } else if (writer_thread_.joinable()) {
    {
      std::lock_guard lock(writer_mutex_);
      writer_stop_ = true;
    }
    writer_cv_.notify_all();
    writer_thread_.join();
  }
  if (leaked_at_exit()) {
    // Its thread still runs (until the process ends), on this session's objects: here::stop()
    // leaks them all.
    keep_running(sampler_.release());
  } else {
    sampler_.reset();  // releases the signal
    if (ring_->all_published()) {
      ring_->release_storage();
      lifeboat_.reset();
    }
  }
  end_taps();  // after the last drain
  // A marker writer may still be inside the ring: its storage stays mapped.
  if (lifeboat_) (void)lifeboat_.release();
  retire(ring_);
  if (dump_) {
    Status closed = dump_->close();
    if (write_status_.ok()) write_status_ = closed;
  }
  return write_status_;
}

bool Session::wait_at_exit(const ProfilerThread& thread,
                           const std::function<bool(uint64_t timeout_ns)>& finished) {
  // exit() waits while the thread works, not while it waits for a CPU: where the program's
  // threads keep every CPU busy (200 spinning threads on 2 CPUs), a sampler that used more than
  // its share at 100 us runs again only after hundreds of milliseconds, and exit() took 60-460 ms
  // instead of 2.5. Once kExitStarvedNs have passed with the thread on a CPU less than a
  // kExitStarvedShare of the time, it is given up. A thread merely slow (sanitizers, an
  // emulator, a loaded machine) gets far more than that share, and is waited for.
  constexpr uint64_t kExitStarvedNs = 20000000;
  constexpr uint64_t kExitStarvedShare = 4;  // a quarter
  // Few wake-ups: each one of this thread's is a wait for a CPU too.
  constexpr uint64_t kPollNs = 5000000;
  const std::optional<uint64_t> cpu_at_request = thread.cpu_ns();
  const uint64_t requested_at = monotonic_ns();
  if (finished(kExitStarvedNs)) return true;
  for (;;) {
    const std::optional<uint64_t> cpu = thread.cpu_ns();
    if (!cpu || !cpu_at_request) return finished(UINT64_MAX / 2);  // no clock: as long as it takes
    const uint64_t waited = monotonic_ns() - requested_at;
    if (waited >= kExitStarvedNs && (*cpu - *cpu_at_request) * kExitStarvedShare < waited) {
      return false;
    }
    if (finished(kPollNs)) return true;
  }
}

}  // namespace inprof::internal

namespace inprof::internal {

AllocationStatsRecord Session::allocation_stats() const {
  AllocationStatsRecord stats = AllocationRecorder::instance().stats();
  stats.sample_bytes = options_.allocation_sample_bytes;
  stats.dropped += allocation_pool_->dropped().load(std::memory_order_relaxed);
  return stats;
}

void Session::pause() {
  if (paused_) return;
  paused_ = true;
  g_recording.store(false);
  sampler_->set_paused(true);
  // A tick already under way may still be taking samples: let it finish, so that no sample
  // falls inside the paused range.
  sampler_->hold();
  sampler_->release();
  metadata_.push(RecordType::kPause, PauseRecord{monotonic_ns() - start_ns_});
}

void Session::resume() {
  if (!paused_) return;
  paused_ = false;
  metadata_.push(RecordType::kResume, PauseRecord{monotonic_ns() - start_ns_});
  sampler_->set_paused(false);
  g_recording.store(true);
}

void Session::hold_for_fork() {
  sampler_->hold();
  // The writer allocates while it drains (chunk buffers, zstd). An allocator without fork
  // handlers (GCC 12's ASan runtime, for one) would hand the child its locks as the writer held
  // them, and the child's first allocation of that size would hang: fork() waits for the drain
  // in progress (the writer between drains, waiting for its period, holds nothing).
  if (writer_thread_.joinable()) writer_mutex_.lock();
}

void Session::release_after_fork() {
  if (writer_thread_.joinable()) writer_mutex_.unlock();
  sampler_->release();
}

void Session::abandon_in_child() {
  g_recording.store(false);
  CrashHandler::disarm_after_fork();
  SignalTrigger::disarm_after_fork();
  disarm_stop_trigger_after_fork();
  MarkerRecorder::instance().abandon();
  Declarations::instance().detach();
  StackCopier::release_after_fork();
}

}  // namespace inprof::internal
