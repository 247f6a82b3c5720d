#include "sampling/thread_visitor.h"

#include <algorithm>

#include "sampling/sampler_constants.h"
#include "sampling/thread_names.h"
#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

ThreadVisitor::ThreadVisitor(const SamplerConfig& config, std::unique_ptr<ThreadLister> lister,
                             MetadataQueue& metadata, const std::atomic<bool>& stopping,
                             Visits& visits)
    : config_(config),
      process_id_(process_id()),
      main_thread_(main_thread_id()),
      lister_(std::move(lister)),
      metadata_(metadata),
      stopping_(stopping),
      visits_(visits),
      dormant_(config.interval_ns) {}

void ThreadVisitor::refresh(uint64_t now) {
  // Listing /proc/self/task is most of an idle thread's cost per tick: at most every 4 ms, so a
  // new thread is seen within 4 ms (an exited one simply stops answering meanwhile).
  if (tick_count_ == 0 || now - last_thread_listing_ns_ >= kThreadListingPeriodNs) {
    last_thread_listing_ns_ = now;
    // Not when the count is what the last listing found (a few microseconds to ask, where
    // listing 1,000 threads every 4 ms cost ~12 % of a CPU); at least every 100 ms, for a thread
    // born as another ended.
    // Without records, 100 µs per thread at least: a listing costs ~1 µs per thread (10,000
    // listed every 100 ms were ~110 ms of the sampler's CPU a second).
    const uint64_t full_period =
        every_thread_watched_ ? kAllWatchedFullListingPeriodNs
        : activity_
            ? kWatchedFullListingPeriodNs
            : std::max<uint64_t>(kFullListingPeriodNs, threads_.size() * kFullListingPerThreadNs);
    const bool full_due = now - last_full_listing_ns_ >= full_period;
    // Records were lost: one listing finds the threads whose start or end they held.
    const bool records_incomplete = every_thread_watched_ && !threads_known_by_records_;
    // No thread of the program is known: a listing tells whether its last has ended. (Not the
    // count: an ended main thread, a zombie, is still counted, so the program's end by
    // pthread_exit() left the count as the last listing had it, and the process waited for the
    // next full listing, 10 s.)
    const bool ended_maybe = program_may_have_ended();
    const bool list_changes = !threads_known_by_records_;
    // A listing of thousands of threads takes milliseconds: one the count asks for comes at most
    // every 19 times the last one's length (5 % of the sampler's time), so that 10,000 threads
    // starting, listed every 4 ms, do not take the sampler's whole CPU. One that ends before the
    // next listing is missed: without the kernel's records nothing else would show it.
    const bool count_may_ask = now - last_full_listing_ns_ >= kListingPauseFactor * listing_ns_;
    std::optional<uint64_t> count;
    if (list_changes && count_may_ask && !full_due && !records_incomplete && !ended_maybe) {
      count = lister_->thread_count();
    }
    if (full_due || records_incomplete || ended_maybe ||
        (list_changes && count_may_ask && (!count || *count != tids_.size()))) {
      last_full_listing_ns_ = now;
      refresh_threads(now);
    }
  }
  refresh_names(now);
  if (activity_) {
    drain_activity();
    list_if_records_lost(now);
  }
}

void ThreadVisitor::note_thread(uint64_t tid, uint64_t now) {
  if (!threads_.count(tid) && !excluded_.count(tid) && !is_profiler_thread(tid)) {
    add_thread(tid, now);
  }
}

void ThreadVisitor::visit_threads(uint64_t now) {
  parked_.take_due(now, [this](uint64_t tid, uint64_t due_ns) {
    auto it = threads_.find(tid);
    if (it != threads_.end() && it->second.parked && it->second.parked_until == due_ns) {
      wake_thread(tid, it->second);
    }
  });
  visiting_.swap(awake_);
  awake_.clear();
  uint32_t visited = 0;
  for (const uint64_t tid : visiting_) {
    // A tick that visits thousands of new threads is long: the kernel's records are read
    // between them too, before its rings overflow (each loss asks every thread again).
    if (activity_ && ++visited % kVisitsBetweenDrains == 0) {
      drain_activity();
      list_if_records_lost(monotonic_ns());
    }
    auto it = threads_.find(tid);
    if (it == threads_.end()) continue;  // ended since
    ThreadState& state = it->second;
    if (!state.awake || state.visited_tick == tick_count_) continue;  // parked, or seen
    state.visited_tick = tick_count_;
    // Where the program's threads leave the sampler little CPU (200 busy threads at exit), one
    // tick's walks took hundreds of milliseconds that a stop waited for.
    if (!stopping_.load(std::memory_order_relaxed)) visits_.visit(tid, state, now);
    if (parkable(state, now)) {
      state.awake = false;
      state.parked = true;
      state.parked_until =
          state.selected && !state.gone ? state.next_check_ns : ParkedThreads::kUntilWoken;
      ++parked_count_;
      parked_.park(tid, state.parked_until);
    } else {
      awake_.push_back(tid);
    }
  }
  parked_.compact_if_stale(parked_count_, [this](uint64_t tid, uint64_t due_ns) {
    auto it = threads_.find(tid);
    return it != threads_.end() && it->second.parked && it->second.parked_until == due_ns;
  });
  if (!activity_ && !stopping_.load(std::memory_order_relaxed)) {
    dormant_.after_visits(
        now, monotonic_ns(), threads_, *lister_, profiler_tids_,
        [](void* visitor, uint64_t tid, ThreadState& state) {
          static_cast<ThreadVisitor*>(visitor)->wake_thread(tid, state);
        },
        this);
  }
}

bool ThreadVisitor::parkable(const ThreadState& state, uint64_t now) const {
  if (state.self_handle >= 0 || state.activity.switched_on || stopping_.load()) return false;
  if (!state.selected || state.gone) return true;  // until it is, or until it is ended
  return !state.ran_since_tick && state.next_check_ns > now && state.retry_at_tick <= tick_count_;
}

void ThreadVisitor::wake_thread(uint64_t tid, ThreadState& state) {
  if (!config_.cpu_samples) return;  // ticks visit no thread
  if (state.parked) {
    state.parked = false;
    --parked_count_;
  }
  if (!state.awake) {
    state.awake = true;
    awake_.push_back(tid);
  }
}

void ThreadVisitor::wake_all() {
  for (auto& [tid, state] : threads_) wake_thread(tid, state);
}

bool ThreadVisitor::program_has_threads() const {
  const uint64_t leader = process_id_;
  for (uint64_t tid : tids_) {
    if (is_profiler_thread(tid)) continue;
    // The main thread stays listed, a zombie, after it called pthread_exit().
    if (tid == leader && lister_->ended(tid).value_or(false)) continue;
    return true;
  }
  return false;
}

bool ThreadVisitor::program_may_have_ended() const {
  // The sampler knows no thread of the program (its last ended) but perhaps the main thread
  // after its end record (main() called pthread_exit(); a listing may show it again, a
  // zombie): a listing tells.
  if (!program_ended_) return false;
  if (threads_.empty()) return true;
  return main_thread_ended_ && threads_.size() == 1 && threads_.begin()->first == process_id_;
}

void ThreadVisitor::list_if_records_lost(uint64_t now, bool last) {
  if (!records_lost_ || (!last && now - last_full_listing_ns_ < kLostRecordsListingPeriodNs)) {
    return;
  }
  last_full_listing_ns_ = now;
  refresh_threads(now, last);
}

void ThreadVisitor::refresh_threads(uint64_t now, bool last) {
  const uint64_t listing_start = monotonic_ns();
  if (!lister_->list(tids_)) return;
  listing_ns_ = monotonic_ns() - listing_start;
  threads_known_by_records_ = every_thread_watched_;
  records_lost_ = false;
  if (!last && program_ended_ && !tids_.empty() && !program_has_threads()) {
    std::exchange(program_ended_, nullptr)();
  }
  visits_.listing();  // the allocations of threads missing from it first
  profiler_tids_.clear();
  for (uint64_t tid : tids_) {
    if (excluded_.count(tid) || is_profiler_thread(tid)) {
      profiler_tids_.push_back(tid);
      continue;
    }
    // Its clock stopped answering and answers again: the id is a new thread's (ids are reused).
    if (auto it = threads_.find(tid);
        it != threads_.end() && it->second.gone && lister_->cpu_time_ns(tid)) {
      end_thread(it, now);
    }
    add_thread(tid, now);
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    // A watched thread is ended a drain after its end record: the records of its last moments
    // (its name, say) may come from another CPU's ring, read later.
    const ThreadActivity& activity = it->second.activity;
    const bool awaiting_end =
        activity.watched && !activity.resync && !(activity.ended && activity.ended_drains > 1);
    if (it->second.last_seen_tick != tick_count_ && !awaiting_end) {
      it = end_thread(it, now);
    } else {
      ++it;
    }
  }
}

std::map<uint64_t, ThreadState>::iterator ThreadVisitor::end_thread(
    std::map<uint64_t, ThreadState>::iterator it, uint64_t now) {
  visits_.ending(it->first, it->second);
  if (it->second.announced) {
    metadata_.push(RecordType::kThreadEnd, ThreadEndRecord{it->first, relative(now)});
  }
  lister_->forget(it->first);
  ThreadNames::instance().forget(it->first);  // the id may be reused by a new thread
  if (it->second.parked) --parked_count_;
  return threads_.erase(it);
}

void ThreadVisitor::add_thread(uint64_t tid, uint64_t now, const OsName* inherited) {
  auto [it, inserted] = threads_.try_emplace(tid);
  it->second.last_seen_tick = tick_count_;
  if (!inserted) return;
  ThreadState& state = it->second;
  state.first_seen_ns = now;
  state.tally = &dormant_.tally();
  if (auto pending = activity_pending_.find(tid); pending != activity_pending_.end()) {
    state.activity = pending->second;
    activity_pending_.erase(pending);
    if (state.activity.ended) ending_.push_back(tid);
  }
  if (every_thread_watched_) state.activity.watched = true;
  // Its CPU is counted from here, so that its first sample carries what it used before
  // (issue 21: else uncounted). Born during the session (the first listing has every thread
  // there was), its CPU clock started at 0.
  state.last_cpu_ns = tick_count_ != 0 ? std::optional<uint64_t>(0) : lister_->cpu_time_ns(tid);
  if (!state.activity.name.empty()) {  // its own rename record came first
    state.os_name = state.activity.name;
    state.os_name_ns = state.activity.name_ns;
  } else if (inherited) {
    state.os_name = inherited->name;
    state.os_name_ns = inherited->as_of_ns;
  } else {
    // Its clock first: a later reading that equals it shows it did not rename itself since.
    if (!state.activity.watched && !state.observed_cpu_ns) {
      state.observe_cpu(lister_->cpu_time_ns(tid), now);
    }
    state.name_read_cpu_ns = state.observed_cpu_ns;
    state.name_read_ns = now;
    state.os_name = lister_->name(tid);
    // Empty if it has ended: nothing known, and its rename record, read later, names it.
    state.os_name_ns = state.os_name.empty() ? 0 : now;
  }
  auto given = ThreadNames::instance().get(tid);
  state.name = given ? *given : state.os_name;
  // One of the profiler's threads, listed between its start and its mark, may have named itself
  // since (it marks itself first): asked again once its name is read, so that no "inprof-…"
  // thread is ever announced (seen under TSan, which widens that window).
  if (is_profiler_thread(tid)) {
    threads_.erase(it);
    return;
  }
  wake_thread(tid, state);
  select(tid, state, now);
}

bool ThreadVisitor::watch_activity(uint64_t starter) {
  activity_ = lister_->watch_activity(starter);
  if (!activity_) return false;
  activity_pending_[starter].watched = true;
  // The program's only thread is the starter (a preloaded session, started before main): every
  // thread it will have descends from it and inherits the events, so each is watched even when
  // the record of its creation is lost (10,000 threads started at once overflow the rings).
  every_thread_watched_ = lister_->list(tids_);
  for (const uint64_t tid : tids_) {
    if (tid != starter && !is_profiler_thread(tid)) every_thread_watched_ = false;
  }
  tids_.clear();
  return true;
}

void ThreadVisitor::drain_activity() {
  lister_->drain_activity(
      [](void* self, const ThreadLister::Activity& record) {
        static_cast<ThreadVisitor*>(self)->on_activity(record);
      },
      this);
  // Kept for one more drain: a thread's records come from the rings of the CPUs it ran on and
  // of the one its creator ran on, each read once per drain, one after another. Its start,
  // written before it ran, may still come after its end (the creator's ring read first).
  for (auto it = activity_pending_.begin(); it != activity_pending_.end();) {
    if (it->second.ended && ++it->second.ended_drains > 1) {
      it = activity_pending_.erase(it);
    } else {
      ++it;
    }
  }
  // Named by their creators: every record older than their creation has now been read.
  ++drains_;
  for (auto it = named_by_creator_.begin(); it != named_by_creator_.end();) {
    std::erase_if(it->second, [this](const NamedByCreator& n) { return n.drain + 2 <= drains_; });
    it = it->second.empty() ? named_by_creator_.erase(it) : std::next(it);
  }
  // Listed threads with an end record: counted here, and ended after a second drain, by the
  // records where they are the list of threads, else by a listing. Kept while records were lost
  // (the listing may come before they are gone): once dropped here, one that a listing still
  // showed stayed until the next full listing, 10 s on, its clock read at every tick (10,000
  // threads ending after a loss: 45,000 reads in 250 ms). (One pass: 10,000 threads ending at
  // once made erasing one at a time quadratic.)
  const uint64_t now = monotonic_ns();
  std::erase_if(ending_, [this, now](uint64_t tid) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return true;
    if (++it->second.activity.ended_drains <= 1 || !threads_known_by_records_) return false;
    end_thread(it, now);
    return true;
  });
}

void ThreadVisitor::on_activity(const ThreadLister::Activity& record) {
  using Kind = ThreadLister::Activity::Kind;
  if (record.kind == Kind::kLost) {
    threads_known_by_records_ = false;  // until a listing
    records_lost_ = true;
    last_loss_ns_ = std::max(last_loss_ns_, record.time_ns ? record.time_ns : monotonic_ns());
    // Any watched thread may have run, may be on a CPU now, or may have ended: each is asked
    // by its clock until a check finds it did not run (then it is off every CPU, and its
    // records tell again), and a listing without it ends it (its end record may be lost).
    // (A burst of 2,000 threads started at once overflowed the rings.)
    auto resync = [](ThreadActivity& activity) {
      activity.on_cpu = true;
      activity.switched_on = true;
      activity.resync = true;
      activity.off_after_loss = false;
    };
    for (auto& [tid, state] : threads_) {
      resync(state.activity);
      // A rename may be among the records lost. Known at its check, which reads its clock: a
      // thread copied at its checks has its name read only if it ran (Sampler::sample_thread;
      // after each loss of 10,000 threads' records, reading every name cost ~50 ms). The others
      // (self-sampled, or not sampled) are read now.
      if (state.self_handle >= 0 || !state.selected) state.mark_name_unsure();
      wake_thread(tid, state);
    }
    for (auto& [tid, activity] : activity_pending_) resync(activity);
    return;
  }
  if (excluded_.count(record.tid) != 0) return;
  ThreadActivity* activity;
  auto it = threads_.find(record.tid);
  if (it == threads_.end() && record.kind == Kind::kCreated) {
    // Listed at once, so that a thread that ends before the next listing is still in the
    // profile, with its name.
    activity_pending_[record.tid].watched = true;
    const bool named_itself = activity_pending_[record.tid].name_ns != 0;
    const std::optional<OsName> inherited = creators_name(record);
    add_thread(record.tid, monotonic_ns(), inherited ? &*inherited : nullptr);
    it = threads_.find(record.tid);
    if (it == threads_.end()) return;  // one of the profiler's
    if (inherited && !named_itself) {
      named_by_creator_[record.creator].push_back({record.tid, record.time_ns, drains_});
    }
  }
  if (it != threads_.end()) {
    activity = &it->second.activity;
  } else {
    if (activity_pending_.size() >= kMostPendingActivity &&
        activity_pending_.count(record.tid) == 0) {
      activity_pending_.clear();
      threads_known_by_records_ = false;
    }
    activity = &activity_pending_[record.tid];
  }
  switch (record.kind) {
    case Kind::kCreated:
      activity->watched = true;
      break;
    case Kind::kEnded:
      activity->ended = true;  // forgotten after this drain, unless it was listed meanwhile
      if (record.tid == process_id_) main_thread_ended_ = true;
      if (it != threads_.end()) ending_.push_back(record.tid);
      break;
    case Kind::kNamed:
      // One of the profiler's, listed before it marked itself (it marks itself, then names
      // itself): ended like any other, never renamed "inprof-…" (seen under TSan).
      if (is_profiler_thread(record.tid)) break;
      // Its renames come from the rings of the CPUs it ran on: an older one may be read last.
      if (record.time_ns < activity->name_ns) break;
      activity->name = record.name;
      activity->name_ns = record.time_ns;
      if (it != threads_.end())
        learn_os_name(record.tid, it->second, activity->name, record.time_ns);
      pass_on_rename(record.tid, activity->name, record.time_ns);
      break;
    case Kind::kOn:
      if (!activity->switched_on || record.time_ns < activity->first_on_ns) {
        activity->first_on_ns = record.time_ns;
      }
      activity->switched_on = true;
      if (it != threads_.end()) wake_thread(record.tid, it->second);
      [[fallthrough]];
    case Kind::kOff:
      activity->watched = true;  // only watched threads' switches are recorded
      // Records of one thread come from the rings of the CPUs it ran on, read one ring after
      // another: the newest says where it is.
      if (record.time_ns >= activity->at_ns) {
        activity->on_cpu = record.kind == Kind::kOn;
        activity->at_ns = record.time_ns;
        activity->off_after_loss = record.kind == Kind::kOff && record.time_ns > last_loss_ns_;
      }
      break;
    default:
      break;
  }
}

std::optional<ThreadVisitor::OsName> ThreadVisitor::creators_name(
    const ThreadLister::Activity& record) const {
  auto creator = threads_.find(record.creator);
  if (record.creator == 0 || creator == threads_.end()) return std::nullopt;
  const ThreadState& state = creator->second;
  // Its name as it was before the creation: a rename after the time it is known for, and
  // before the creation, is a record read later (pass_on_rename()). A name known only from
  // after the creation may not be the one the new thread was born with: that one reads its own.
  if (!state.activity.watched || state.os_name.empty() || state.os_name_ns > record.time_ns) {
    return std::nullopt;
  }
  return OsName{state.os_name, state.os_name_ns};
}

void ThreadVisitor::learn_os_name(uint64_t tid, ThreadState& state, const std::string& name,
                                  uint64_t as_of_ns) {
  if (as_of_ns < state.os_name_ns) return;  // what was known is newer
  state.os_name = name;
  state.os_name_ns = as_of_ns;
  if (!ThreadNames::instance().get(tid)) rename(tid, state, name, monotonic_ns());
}

void ThreadVisitor::pass_on_rename(uint64_t creator, const std::string& name, uint64_t as_of_ns) {
  auto found = named_by_creator_.find(creator);
  if (found == named_by_creator_.end()) return;
  for (const NamedByCreator& created : found->second) {
    if (as_of_ns >= created.created_ns) continue;  // renamed after creating it
    auto it = threads_.find(created.tid);
    // Ended, or it named itself since (its own name wins).
    if (it == threads_.end() || it->second.activity.name_ns != 0) continue;
    learn_os_name(created.tid, it->second, name, as_of_ns);
  }
}

bool ThreadVisitor::may_have_been_renamed(const ThreadState& state, uint64_t now) {
  // A thread renames itself only while it runs: one whose clock has not moved since its name
  // was read is not read again (10,000 sleeping threads without the kernel's records: 2,500
  // reads a second, a third of what the sampler spent). Not its first read again: its creator
  // may have renamed it just after that (pthread_setname_np() after pthread_create()). Not
  // where nothing reads its clock (an unselected thread, whose rename may select it), and not
  // for long: another thread may rename it, which only a read shows without the kernel's records.
  if (state.activity.watched || state.os_name_reads == 0 || !state.selected ||
      !state.name_read_cpu_ns || !state.observed_cpu_ns) {
    return true;
  }
  return *state.observed_cpu_ns != *state.name_read_cpu_ns ||
         now - state.name_read_ns >= kOsNameRecheckNs;
}

void ThreadVisitor::refresh_names(uint64_t now) {
  const uint64_t generation = ThreadNames::instance().generation();
  const bool os_names_due = now - last_os_names_ns_ >= kOsNamesRefreshNs;
  if (generation == names_generation_ && !os_names_due) return;
  const bool given_changed = generation != names_generation_;
  names_generation_ = generation;
  if (os_names_due) last_os_names_ns_ = now;
  for (auto& [tid, state] : threads_) {
    // (A watched thread's renames come as records.)
    const bool os_name_due = os_names_due && now >= state.next_os_name_ns &&
                             (!state.activity.watched || state.activity.name_unsure) &&
                             may_have_been_renamed(state, now);
    // Nothing to learn: no name or choice was given since the last pass, and its OS name is
    // not to be read now (10,000 watched threads were 40,000 lookups a second under a lock).
    if (!given_changed && !os_name_due) continue;
    // One of the profiler's, listed before it marked itself: ended at the next listing, and
    // never renamed meanwhile.
    if (is_profiler_thread(tid)) continue;
    auto given = ThreadNames::instance().get(tid);
    std::string name;
    if (given) {
      name = *given;
    } else if (os_name_due) {
      // Past the budget (reread_pacer.h), at a later pass: the name known meanwhile stays.
      if (!reread_pacer_.may_read(now)) continue;
      // Threads name themselves soon after they start, seldom later: read again after 0.25,
      // 0.5, 1 ... 4 s (1,000 threads' names read every 0.25 s: ~1 % of a CPU).
      state.os_name_reads = std::min<uint32_t>(state.os_name_reads + 1, 5);
      state.next_os_name_ns = now + (kOsNamesRefreshNs << state.os_name_reads) / 2;
      state.name_read_cpu_ns = state.observed_cpu_ns;
      state.name_read_ns = now;
      const uint64_t read_start_ns = monotonic_ns();
      name = lister_->name(tid);
      reread_pacer_.charge(monotonic_ns() - read_start_ns);
      // As in add_thread: a profiler thread may have marked and named itself since the check.
      if (is_profiler_thread(tid)) continue;
      if (!name.empty() && now >= state.os_name_ns) {
        state.os_name = name;
        state.os_name_ns = now;
      }
    }
    rename(tid, state, name, now);
  }
}

void ThreadVisitor::rename(uint64_t tid, ThreadState& state, const std::string& name,
                           uint64_t now) {
  if (!name.empty() && name != state.name) {
    state.name = name;
    if (state.announced) {
      metadata_.push(RecordType::kThreadName, ThreadRecord{tid, relative(now), 0, name});
    }
  }
  select(tid, state, now);  // a rename or (un)registration may change the selection
}

void ThreadVisitor::select(uint64_t tid, ThreadState& state, uint64_t now) {
  const bool was_selected = state.selected;
  state.selected = config_.thread_filters.empty();
  for (const std::string& filter : config_.thread_filters) {
    if (state.name.find(filter) != std::string::npos) state.selected = true;
  }
  switch (ThreadNames::instance().choice(tid)) {
    case ThreadNames::Choice::kAlways:
      state.selected = true;
      break;
    case ThreadNames::Choice::kNever:
      state.selected = false;
      break;
    case ThreadNames::Choice::kFilters:
      break;
  }
  if (state.selected && !was_selected && state.parked) wake_thread(tid, state);
  if (state.selected && !state.announced) {
    state.announced = true;
    metadata_.push(
        RecordType::kThreadStart,
        ThreadRecord{tid, relative(now), tid == main_thread_ ? kThreadMain : 0u, state.name});
  }
}

}  // namespace inprof::internal
