// The thread visitor: which threads the program has, what they are called, which are sampled,
// and which a tick visits. The list comes from listings of the OS (ThreadLister) and, where the
// kernel keeps them, from its records of thread starts, ends, names and switches, so that a
// thread found off every CPU since its last check costs no system call and is parked until its
// next one (ParkedThreads). Apart from the sampler because none of this depends on how a thread
// is sampled: the sampler is told to visit a thread, and that one has ended (Visits).
//
// Sampler thread only. A tick's visits allocate nothing once the thread list is steady (the
// awake list is reused); listing, naming and a thread's arrival may.
#ifndef INPROF_LIB_SAMPLING_THREAD_VISITOR_H_
#define INPROF_LIB_SAMPLING_THREAD_VISITOR_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sampling/dormant_threads.h"
#include "sampling/parked_threads.h"
#include "sampling/reread_pacer.h"
#include "sampling/sampler_config.h"
#include "sampling/sampler_constants.h"
#include "sampling/thread_lister.h"
#include "sampling/thread_state.h"
#include "session/metadata_queue.h"

namespace inprof::internal {

class ThreadVisitor {
 public:
  // The sampler's side of the visits.
  class Visits {
   public:
    // What a tick does for one selected or unselected thread it visits.
    virtual void visit(uint64_t tid, ThreadState& state, uint64_t now) = 0;
    // The thread ended: what it left is written now, before its end record.
    virtual void ending(uint64_t tid, ThreadState& state) = 0;
    // A listing is about to add and end threads: a thread missing from it has exited, and so has
    // published every allocation it sampled; written now, they are never drained after its end
    // (which would announce the thread again).
    virtual void listing() = 0;

   protected:
    ~Visits() = default;
  };

  // `stopping`: a stop was requested (visits end at once; nothing is parked any more).
  ThreadVisitor(const SamplerConfig& config, std::unique_ptr<ThreadLister> lister,
                MetadataQueue& metadata, const std::atomic<bool>& stopping, Visits& visits);
  ThreadVisitor(const ThreadVisitor&) = delete;
  ThreadVisitor& operator=(const ThreadVisitor&) = delete;

  ThreadLister& lister() { return *lister_; }
  // The budget of reads again of what is known of sleeping threads: their stacks (the
  // sampler's copies) and their OS names (refresh_names()).
  RereadPacer& reread_pacer() { return reread_pacer_; }
  // Threads never listed: the profiler's own.
  void exclude(uint64_t tid) { excluded_.insert(tid); }
  // Called once when no thread of the program is left (Sampler::set_program_ended()).
  void set_program_ended(std::function<void()> ended) { program_ended_ = std::move(ended); }
  // Follows `starter` and the threads it creates by the kernel's records (thread_lister.h);
  // false where the OS keeps none.
  bool watch_activity(uint64_t starter);
  bool watching() const { return activity_; }
  // Reads the kernel's records since the last drain (where watching()).
  void drain_activity();
  // Lists the threads if records were lost since the last listing (at most every
  // kLostRecordsListingPeriodNs, unless `last`: the session ends): a thread whose start record
  // was lost is known only from a listing, and one that ends before any would be missing from the
  // profile. A long tick (thousands of threads visited after a loss) lists within it.
  void list_if_records_lost(uint64_t now, bool last = false);
  // Its clock no longer answers: it has ended. One whose records were lost may have lost its end
  // record too, and only a listing ends it then: one is asked for, paced as after a loss. (A
  // listing just after the loss had shown it, a zombie: it stayed 10 s, its clock read at
  // every tick, until the next full listing.)
  // Until then it is parked: a listing paced by its length (refresh()) came up to 190 ms after
  // 10,000 threads ended, and each was visited, its clock asked, at every tick meanwhile.
  void note_gone(ThreadState& state) {
    state.gone = true;
    if (state.activity.resync) records_lost_ = true;
  }

  // A tick's bookkeeping: lists the threads when due (or where the records say the count
  // changed), reads their names, drains the kernel's records.
  void refresh(uint64_t now);
  // One tick's visits: the awake threads and the parked ones due now.
  void visit_threads(uint64_t now);
  // Every thread is visited at the next tick (parked ones too): sampling resumes.
  void wake_all();
  // The tick is over.
  void end_tick() { ++tick_count_; }
  uint64_t tick() const { return tick_count_; }
  // Whether a sleeping thread may back off past kMostIdleBackoffShift without the kernel's
  // records: the process's CPU clock guards the dormant ones (dormant_threads.h).
  bool dormant_guarded() const { return !activity_ && dormant_.guarded(); }
  // How long a dormant thread may go unchecked (sampler_constants.h): longer with more threads.
  uint64_t longest_dormant_check_ns() const {
    return std::clamp<uint64_t>(threads_.size() * kDormantCheckPerThreadNs, kShortestDormantCheckNs,
                                kLongestDormantCheckNs);
  }
  // A thread named by a record before any listing showed it (an allocation): known, named and
  // announced from now, unless excluded.
  void note_thread(uint64_t tid, uint64_t now);

  std::map<uint64_t, ThreadState>& threads() { return threads_; }
  const std::map<uint64_t, ThreadState>& threads() const { return threads_; }
  // The threads the next tick visits (stale and repeated ids are skipped).
  const std::vector<uint64_t>& awake() const { return awake_; }

 private:
  void on_activity(const ThreadLister::Activity& record);
  // A listing; `last`: the session is ending (it does not end the program).
  void refresh_threads(uint64_t now, bool last = false);
  // A thread's OS name, and a time it held (see ThreadState::os_name).
  struct OsName {
    std::string name;
    uint64_t as_of_ns;
  };
  // A thread not listed yet (born since the last listing): known, named and announced from now.
  // Named by `inherited` (its creator's name) where given, else by its own record or the OS.
  void add_thread(uint64_t tid, uint64_t now, const OsName* inherited = nullptr);
  // The name a thread whose creation `record` reports was born with, when the creator's name as
  // it was before the creation is known.
  std::optional<OsName> creators_name(const ThreadLister::Activity& record) const;
  // A record or a read says the thread's OS name was `name` at `as_of_ns`: taken if newer than
  // what was known, and shown unless a name was given to inprof.
  void learn_os_name(uint64_t tid, ThreadState& state, const std::string& name, uint64_t as_of_ns);
  // The creator's rename, recorded at `as_of_ns`: the threads it created after that, named by
  // its older name because that record was read after theirs, take it.
  void pass_on_rename(uint64_t creator, const std::string& name, uint64_t as_of_ns);
  // Writes what it left and its end; forgets it.
  std::map<uint64_t, ThreadState>::iterator end_thread(std::map<uint64_t, ThreadState>::iterator it,
                                                       uint64_t now);
  void refresh_names(uint64_t now);
  // Whether its OS name may have changed since it was last read (refresh_names()).
  static bool may_have_been_renamed(const ThreadState& state, uint64_t now);
  // Takes `name` (if not empty) as the thread's, saying so in the dump once it is announced.
  void rename(uint64_t tid, ThreadState& state, const std::string& name, uint64_t now);
  // Re-applies the filters after a (re)naming; announces a newly selected thread.
  void select(uint64_t tid, ThreadState& state, uint64_t now);
  // Whether a tick may pass the thread by until its next check (parked_until()).
  bool parkable(const ThreadState& state, uint64_t now) const;
  // Visited from the next tick on (a record said it ran, it was selected, it is new).
  void wake_thread(uint64_t tid, ThreadState& state);
  bool program_may_have_ended() const;
  // Whether a listing shows a live thread of the program (see set_program_ended()).
  bool program_has_threads() const;
  uint64_t relative(uint64_t t) const { return config_.relative(t); }

  const SamplerConfig& config_;
  // Asked once (each is a system call; the sampler does not outlive a fork).
  const uint64_t process_id_;
  const uint64_t main_thread_;
  std::unique_ptr<ThreadLister> lister_;
  MetadataQueue& metadata_;
  const std::atomic<bool>& stopping_;
  Visits& visits_;

  std::unordered_set<uint64_t> excluded_;
  std::map<uint64_t, ThreadState> threads_;
  // The threads each tick visits (stale and repeated ids are skipped), and those it passes by.
  std::vector<uint64_t> awake_;
  std::vector<uint64_t> visiting_;  // scratch: awake_ as the tick began
  ParkedThreads parked_;
  DormantThreads dormant_;
  std::vector<uint64_t> profiler_tids_;  // as the last listing showed them
  size_t parked_count_ = 0;
  bool activity_ = false;  // watch_activity() succeeded
  // Every program thread descends from the starter (see watch_activity()).
  bool every_thread_watched_ = false;
  // Every thread watched and no record lost since the last full listing: the kernel's records
  // are the list of threads (their starts add them, their ends end them), so a change in the
  // thread count needs no listing of /proc/self/task (at 10,000 threads, listing every 4 ms while
  // they started was a fifth of what the sampler spent).
  bool threads_known_by_records_ = false;
  bool records_lost_ = false;  // since the last listing
  // Records of threads not listed yet (bounded: cleared when it grows past kMostPendingActivity,
  // those threads then asked as unwatched ones are).
  std::unordered_map<uint64_t, ThreadActivity> activity_pending_;
  std::vector<uint64_t> ending_;  // listed threads whose end record came (drain_activity())
  // Threads named by their creator's name (no read of their own: at 10,000 threads started, a
  // fifth of the sampler's CPU), by creator, kept until every record older than their creation
  // has been read (the drain after the one that read it): a rename of the creator made before
  // the creation may come from another CPU's ring, read later (pass_on_rename()).
  struct NamedByCreator {
    uint64_t tid;
    uint64_t created_ns;
    uint64_t drain;  // drains_ when it was created
  };
  std::unordered_map<uint64_t, std::vector<NamedByCreator>> named_by_creator_;
  uint64_t drains_ = 0;
  uint64_t last_loss_ns_ = 0;  // when the kernel could write records again after the last loss
  RereadPacer reread_pacer_;
  std::vector<uint64_t> tids_;  // scratch for the listing
  std::function<void()> program_ended_;
  bool main_thread_ended_ = false;  // its end record came (main() called pthread_exit())

  uint64_t tick_count_ = 0;
  uint64_t names_generation_ = ~uint64_t(0);
  uint64_t last_os_names_ns_ = 0;
  uint64_t last_thread_listing_ns_ = 0;
  uint64_t last_full_listing_ns_ = 0;
  uint64_t listing_ns_ = 0;  // how long the last listing took
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_THREAD_VISITOR_H_
