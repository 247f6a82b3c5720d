// One profiling session: the stack copier, the sampler thread, the ring buffer and, when it
// streams, the writer thread that drains the ring into the dump. A ring (flight recorder) session
// has no writer: captures copy what the ring holds into a dump of their own. Created by
// Profiler::start, ended by Profiler::stop.
#ifndef INPROF_LIB_SESSION_H_
#define INPROF_LIB_SESSION_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "allocations/allocation_pool.h"
#include "dump/dump_writer.h"
#include "inprof/profiler.h"
#include "sampling/sampler.h"
#include "session/crash_handler.h"
#include "session/crash_writer.h"
#include "session/lifeboat.h"
#include "session/metadata_queue.h"
#include "session/record_tap.h"
#include "session/ring_buffer.h"
#include "session/signal_trigger.h"
#include "session/window_files.h"
#include "session/window_repeats.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

// Checks every Options field; the message names the field and its allowed range.
Status validate(const Options& options);

class Session {
 public:
  // `taps_only`: a stream that writes no dump, only to the record taps attached (pull mode).
  static std::unique_ptr<Session> start(const Options& options, Status* status,
                                        bool taps_only = false);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Stops sampling, drains everything into the dump (ring mode: captures the ring to the output
  // path) and closes it; reports the first I/O error. At exit, the wait for the sampler's last
  // collection is bounded (wait_at_exit()): when it is given up, the session must be
  // leaked (abandoned()), its sampler thread running on until the process ends.
  Status stop(bool at_exit = false);
  bool abandoned() const { return sampler_abandoned_.load(std::memory_order_relaxed); }
  // At exit: a thread of the session's still runs; the session must not be deleted.
  bool leaked_at_exit() const { return abandoned() || writer_detached_; }

  // Ring mode: writes what the ring holds now to a new dump at `path`; sampling goes on.
  Status capture(const std::string& path, CaptureReason reason = CaptureReason::kRequest);
  bool ring_mode() const { return ring_mode_; }

  // Record taps (record_tap.h, session_taps.cc), stream mode only: attach_tap() first hands the
  // tap the metadata retained so far; stop() ends every tap still attached.
  void attach_tap(RecordTap* tap);
  void detach_tap(RecordTap* tap);
  // Wakes the writer and waits (up to `timeout_ns`) until a drain that started after this call
  // has ended: the taps then have every record reserved before it. False on timeout or stop.
  bool drain_for_taps(uint64_t timeout_ns);
  bool taps_only() const { return taps_only_; }
  uint64_t start_ns() const { return start_ns_; }
  const Options& options() const { return options_; }

  void pause();
  void resume();
  bool paused() const { return paused_; }

  // Around fork(): no sample may interrupt the forking thread (fork restarts when a signal
  // arrives), so sampling holds still from the prepare handler to the parent's; and the writer
  // is held between drains, so that no thread of the library is inside the allocator.
  void hold_for_fork();
  void release_after_fork();
  // In the child: the session's threads did not survive the fork. Forget the session without
  // touching its resources (they belong to the parent).
  static void abandon_in_child();

 private:
  Session(const Options& options, uint64_t start_ns, bool taps_only);
  // The steps of start(), in order; each false (with `status`) where the session cannot start.
  // The dump (or, in ring mode, the file captures go to) is created: a path that cannot be
  // written is said now.
  bool open_output(Status* status);
  // The process's record: first in the dump, or first of every capture and window.
  void record_process();
  // The sampler, with the unwinder and the allocation pool the options ask for.
  void create_sampler(std::unique_ptr<StackCopier> copier);
  Status start_ring_services(const std::string& output_path);
  // The writer thread (stream mode), then the sampler thread, which has listed the threads and
  // watches new ones once this returns.
  bool start_threads(Status* status);
  bool start_writer_thread();
  // Markers, declarations and allocations flow into the session from now on.
  bool attach_recorders(Status* status);
  // A thread of the profiler's was refused: says so, ends what started.
  void refuse_start(Status* status);
  // The statistics record as of now (the profiler's CPU: the sampler's, the writer's at its last).
  StatsRecord stats_record() const;
  void writer_loop();
  // Stores the writer thread's CPU time for the stats (also from stop(), on the program's thread).
  void note_writer_cpu();
  // At exit: whether `thread` ended (`finished` waits for that, up to a timeout), waiting only
  // while it gets a CPU (see stop()).
  bool wait_at_exit(const ProfilerThread& thread,
                    const std::function<bool(uint64_t timeout_ns)>& finished);
  // Waits (yielding) until every reserved record is published; bounded once the sampler is
  // abandoned, whose reservation may stay open until the process ends.
  void wait_all_published(const std::function<void()>& meanwhile, size_t max_yields = SIZE_MAX);
  // How long the writer may sleep: `filled` bytes came into the ring in the last `waited` ns.
  uint64_t next_drain_in_ns(uint64_t filled, uint64_t waited, uint64_t rotate_ns) const;
  void drain(bool final);
  // Rotating stream: metadata and ring records drained into the current window's dump.
  void drain_records();
  // Writes the chunk under way; with a lifeboat, records what the dump now holds and frees the
  // ring's space it took (`finished`: the end record is in it).
  void flush_chunk(bool finished);
  // Metadata taken from the queue into the chunk, and into the lifeboat's journal.
  void add_metadata(RecordType type, std::span<const uint8_t> payload);
  // Ends the current window's dump (stats, its range, JIT map, end record) and closes it.
  void end_window(uint64_t now);
  // Closes the current window and opens the next.
  void rotate();
  Status write_capture(std::unique_ptr<OutputFile> file, CaptureReason reason);
  // Copies the process's JIT symbol map (/tmp/perf-<pid>.map), if any, into `dump`.
  static Status copy_jit_map(DumpWriter& dump);  // flushes chunks as they fill

  AllocationStatsRecord allocation_stats() const;
  // A record for the taps attached (the writer's; at stop(), the stopping thread's).
  void feed_taps(RecordType type, std::span<const uint8_t> payload);
  // A metadata record taken from the queue (a stream that does not rotate): for the taps, and
  // kept for those attached later.
  void feed_taps_metadata(RecordType type, const std::vector<uint8_t>& payload);
  void end_taps();

  // Allocation profiling: the slots sampled allocations wait in for the sampler (its stack
  // copies are at most kAllocationStackBytes), and the address set's capacity.
  static constexpr size_t kAllocationSlots = 64;
  static constexpr size_t kAllocationStackBytes = 32u << 10;
  static constexpr uint64_t kTrackedSampled = 64u << 10;
  static constexpr uint64_t kTrackedAtEveryAllocation = 4u << 20;

  const Options options_;
  const uint64_t start_ns_;
  const bool ring_mode_;
  const bool taps_only_;
  std::unique_ptr<DumpWriter> dump_;           // stream mode
  std::unique_ptr<OutputFile> final_capture_;  // ring mode: where stop() writes the ring
  std::string output_path_;
  std::mutex capture_mutex_;  // one capture at a time
  unsigned signal_captures_ = 0;
  std::unique_ptr<CrashWriter> crash_writer_;
  std::unique_ptr<CrashHandler> crash_handler_;
  std::unique_ptr<SignalTrigger> capture_trigger_;
  // A stream written under `inprof record`: the ring lives in it, so that the launcher can finish
  // the dump if the process ends without stop() (lifeboat.h). Null elsewhere.
  std::unique_ptr<Lifeboat> lifeboat_;
  // Never deleted: a marker writer may still hold the pointer after the session ended (see
  // MarkerRecorder). Only its storage is released, once closed and drained.
  RingBuffer* ring_;
  MetadataQueue metadata_;
  std::unique_ptr<AllocationPool> allocation_pool_;  // before the sampler: it outlives it
  std::unique_ptr<Sampler> sampler_;
  ProfilerThread sampler_thread_;
  ProfilerThread writer_thread_;

  std::mutex writer_mutex_;
  std::condition_variable writer_cv_;
  bool writer_stop_ = false;
  std::atomic<uint64_t> writer_cpu_ns_{0};    // the writer thread's CPU time at its last stats
  std::atomic<bool> drain_requested_{false};  // set by the sampler: the ring is a quarter full
  uint64_t last_flush_ns_ = 0;
  // Rotating stream (options_.rotate_interval): the writer thread's alone.
  const bool rotating_;
  std::unique_ptr<WindowFiles> window_files_;
  WindowRepeats window_repeats_;
  uint64_t window_number_ = 1;
  uint64_t window_start_ns_ = 0;  // since start_ns_
  uint64_t next_metadata_ = 0;    // the MetadataQueue sequence number drained up to
  Status write_status_;
  bool started_ = false;  // start() finished: there is something to write at stop()
  bool stopped_ = false;
  // exit() went on without the sampler's last collection (see stop()).
  std::atomic<bool> sampler_abandoned_{false};
  bool writer_detached_ = false;   // at exit, after its last drain was done by stop()
  bool final_drain_done_ = false;  // by stop(), at exit; under writer_mutex_
  bool writer_finished_ = false;   // its loop has returned (then); under writer_mutex_
  bool paused_ = false;
  // The record taps attached; taps_ under taps_mutex_, tap_count_ read first without it.
  std::mutex taps_mutex_;
  std::vector<RecordTap*> taps_;
  // What a stream that does not rotate took from metadata_, kept (pruned) for taps attached later.
  MetadataQueue tap_metadata_{MetadataQueue::Mode::kRetain};
  std::atomic<size_t> tap_count_{0};
  uint64_t drains_done_ = 0;  // the writer's drains, under writer_mutex_ (drain_for_taps)
  uint64_t markers_dropped_at_start_ = 0;
  // Whether the kernel's records follow the threads' activity (StatsRecord::activity_followed).
  std::atomic<uint64_t> activity_followed_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SESSION_H_
