// What the sampler knows of one thread, in one place because each of its parts reads what the
// others wrote: the thread visitor (listing, the kernel's records, names, parking), the
// collectors (its timer or ring) and the sample encoder (what its records so far stand for).
// A plain struct: its fields are the contract between those parts, which own no thread state.
// Sampler thread only.
#ifndef INPROF_LIB_SAMPLING_THREAD_STATE_H_
#define INPROF_LIB_SAMPLING_THREAD_STATE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "sampling/self_sampling.h"

namespace inprof::internal {

// A thread as the kernel's records tell it (ThreadVisitor::watch_activity()).
struct ThreadActivity {
  bool watched = false;      // its switches are recorded (else its clock is asked)
  bool on_cpu = true;        // the latest record says it is on a CPU (true until one says not)
  bool switched_on = false;  // switched onto a CPU since its last check
  // When it was first switched on since its last check: its previous stack (where it slept) is
  // its stack until then.
  uint64_t first_on_ns = 0;
  uint64_t at_ns = 0;    // time of the record on_cpu comes from
  std::string name;      // the name it gave itself, if a record said so
  uint64_t name_ns = 0;  // and that record's time
  bool ended = false;    // not listed yet, and already ended
  bool resync = false;   // records were lost since its last check (asked by its clock)
  // Its latest record is a switch off a CPU later than the last loss: off every CPU now,
  // whatever it did while records were lost.
  bool off_after_loss = false;
  // A rename of its own may be among the records lost: its OS name is read until a check finds
  // it did not run since (a thread that did not run named nobody).
  bool name_unsure = false;
  uint8_t ended_drains = 0;  // drains since then
};

// What the sampler's readings of threads' CPU clocks have accounted for, all threads together
// (DormantThreads compares it with the process's CPU clock).
struct CpuTally {
  uint64_t read_ns = 0;
};

struct ThreadState {
  std::string name;  // as the profile shows it: the name given to inprof, else the OS's
  // Its OS name as last known, and a time when it held (a record's, or a read's start): a
  // thread it creates starts with it (the kernel copies it at creation).
  std::string os_name;
  uint64_t os_name_ns = 0;
  ThreadActivity activity;
  std::optional<uint64_t> last_cpu_ns;  // its CPU time the samples written so far stand for
  // The CPU time its previous timer or ring snapshot carried, by that snapshot's clock (a
  // ring's is the kernel event's, which gains on the thread's own clock where the thread is
  // often preempted); unset when its self-sampling starts.
  std::optional<uint64_t> last_snapshot_cpu_ns;
  // Its CPU time when the sampler last read it, and when: what it used after its last sample
  // is still known when it exits (SampleEncoder::write_tail).
  std::optional<uint64_t> observed_cpu_ns;
  uint64_t observed_ns = 0;
  uint64_t last_record_ns = 0;     // time of its last sample or repeat written
  bool has_stack = false;          // a previous sample exists that a repeat may refer to
  bool last_stack_unseen = false;  // that sample is flagged kSampleRanUnseen
  uint32_t timeouts = 0;           // consecutive unanswered requests
  uint64_t retry_at_tick = 0;      // back-off after a timeout
  uint64_t last_seen_tick = 0;
  bool gone = false;  // its clock no longer answered: it has ended (ended by a listing or record)
  bool selected = false;   // passes the thread filters
  bool announced = false;  // its start record is written (once it was first selected)

  // Self-sampling (self_sampling.h): the copier's handle, or -1 while copied each tick.
  int self_handle = -1;
  // It ran since its previous sample (copied per tick), or since the previous tick (sampled by
  // its own timer or the kernel).
  bool ran_since_tick = true;
  std::optional<uint64_t> cpu_at_tick;      // its CPU time at the last tick (self-sampled)
  SelfSampling::Counts self_counts;         // as of the last collection
  uint64_t last_answer_ns = 0;              // when its handler was last seen answering
  std::optional<uint64_t> cpu_when_silent;  // CPU time once it had not answered for a while
  uint64_t no_labels_before_ns = 0;         // it had no label stack yet at this time
  uint64_t last_self_sample_ns = 0;         // time of its last snapshot collected
  uint64_t drained = 0;                     // snapshots collected from its timer, in all
  uint64_t drained_at_tick = 0;             // `drained` at the last tick
  uint64_t answered_at_tick = 0;            // self_counts.answered at the last tick
  uint64_t last_sp = 0;                     // its SP in its last snapshot (0: none yet)
  // Its last stack is one its timer or ring took while it ran, and none was copied since: where
  // it sleeps now is not known yet, so a tick that finds it asleep copies it rather than repeat.
  bool sleep_stack_due = false;
  // Found asleep again after a short wake while reads were over their budget (RereadPacer): its
  // new stack is copied at a later check, and the CPU of the wake goes with that copy.
  bool copy_deferred = false;
  uint32_t arm_refusals = 0;    // consecutive times it could not get a timer
  uint64_t arm_after_tick = 0;  // no new attempt before this tick
  uint64_t first_seen_ns = 0;   // when the sampler first listed it
  uint64_t last_ran_ns = 0;     // the last tick that found its CPU time grown (with a timer)
  uint32_t os_name_reads = 0;   // its OS name was read this many times; again from:
  uint64_t next_os_name_ns = 0;
  // Its CPU time as last read before its OS name was read, and when that name was read: a
  // thread that did not run since did not rename itself (ThreadVisitor::refresh_names).
  std::optional<uint64_t> name_read_cpu_ns;
  uint64_t name_read_ns = 0;
  // Self-sampled: its last collection found it off every CPU by the kernel's records (and took
  // what its ring held), so while no record says it was switched on since, it did not run.
  bool off_cpu_at_collect = false;
  // Asleep at its last checks: its CPU clock is read again only from this time (backing off).
  uint32_t idle_checks = 0;
  uint64_t next_check_ns = 0;
  // How busy it is: time running or waiting for a CPU ("runnable"), since a probe.
  uint64_t probe_ns = 0;
  std::optional<uint64_t> probe_runnable_ns;
  // Visited at every tick (listed in the visitor's awake threads), or parked until a time (see
  // ParkedThreads).
  bool awake = false;
  bool parked = false;
  uint64_t parked_until = 0;
  uint64_t visited_tick = ~uint64_t(0);

  // A rename of its own may be among records lost: its OS name is read from the next names pass.
  void mark_name_unsure() {
    activity.name_unsure = true;
    next_os_name_ns = 0;
    os_name_reads = 0;
  }

  CpuTally* tally = nullptr;  // where its readings are added up (its visitor's)

  // Notes its CPU time as just read.
  void observe_cpu(std::optional<uint64_t> cpu, uint64_t now) {
    if (!cpu) return;
    const uint64_t before = observed_cpu_ns.value_or(0);
    if (tally && *cpu > before) tally->read_ns += *cpu - before;
    observed_cpu_ns = cpu;
    observed_ns = now;
  }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_THREAD_STATE_H_
