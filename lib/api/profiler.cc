// The public API: one process-wide session behind a mutex.
#include "inprof/profiler.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "api/copies.h"
#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "memory/own_heap.h"
#include "sampling/thread_names.h"
#include "session/process_info.h"
#include "session/session.h"

namespace inprof {
namespace {

std::mutex g_mutex;
// Leaked on purpose: a session still running at exit is stopped by the atexit hook, and static
// destructors must not race with it.
internal::Session* g_session = nullptr;
std::atomic<bool> g_running{false};
// A session whose threads were still running when exit() went on without them (Session::stop()).
internal::Session* g_left_running = nullptr;
// Pull mode: g_session was started for scrapes alone, and how many scrapes read it now.
bool g_pull_owned = false;
size_t g_scrapes = 0;
internal::RecordTap* g_allocation_tap = nullptr;  // pull mode's heap

// Under g_mutex: the allocation tap on the running session, if it records allocations.
void attach_allocation_tap() {
  if (g_allocation_tap && g_session && !g_session->ring_mode() &&
      g_session->options().allocation_sample_bytes != 0) {
    g_session->attach_tap(g_allocation_tap);
  }
}

// Under g_mutex.
Status stop_locked(bool at_exit) {
  std::unique_ptr<internal::Session> session(g_session);
  g_session = nullptr;
  g_pull_owned = false;
  g_running.store(false);
  Status status = session->stop(at_exit);
  // Its threads may still run on the session's objects until the process ends: kept reachable
  // (a leak checker sees it in use, as it is).
  if (session->leaked_at_exit()) g_left_running = session.release();
  return status;
}

Status stop_session(bool at_exit) {
  std::lock_guard lock(g_mutex);
  // The session pull mode started for its scrapes is theirs to stop, but at exit.
  if (g_session == nullptr || (g_pull_owned && !at_exit)) {
    return Status::error(Status::Code::kNotRunning, "the profiler is not running");
  }
  return stop_locked(at_exit);
}

// Unconditionally: a stop() under way on another thread (the program's, or the INPROF_DURATION /
// dump-signal stopper) has already cleared g_running, and exit() must wait on the mutex for it to
// finish the dump instead of ending the process in the middle of it.
void stop_at_exit() {
  const int saved_errno = errno;  // the last drain checks descriptors of the program's table
  (void)stop_session(/*at_exit=*/true);
  errno = saved_errno;
}

// fork(): the prepare handler takes every lock the library owns, so that the child never
// inherits one held by a thread that does not exist there, and holds sampling still (a signal
// makes fork() restart, and at 1 kHz a large process might never finish forking).
[[maybe_unused]] void prepare_fork() {  // unused where fork() does not exist
  g_mutex.lock();
  if (g_session) g_session->hold_for_fork();
  internal::Declarations::instance().mutex().lock();
  internal::ThreadNames::instance().mutex().lock();
  internal::label_stacks_mutex().lock();
#if defined(__linux__)
  internal::own_heap_hold_for_fork();  // last: the holders of the locks above allocate
#endif
}

void unlock_registries() {
#if defined(__linux__)
  internal::own_heap_release_after_fork();
#endif
  internal::label_stacks_mutex().unlock();
  internal::ThreadNames::instance().mutex().unlock();
  internal::Declarations::instance().mutex().unlock();
}

[[maybe_unused]] void parent_after_fork() {
  unlock_registries();
  if (g_session) g_session->release_after_fork();
  g_mutex.unlock();
}

// The child has none of the session's threads: it starts without a session (and may start its
// own). The parent's session objects are left alone; they are the parent's.
[[maybe_unused]] void child_after_fork() {
  unlock_registries();
  if (g_session) {
    internal::Session::abandon_in_child();
    g_session = nullptr;
    g_running.store(false);
    g_pull_owned = false;
    g_scrapes = 0;
  }
  g_mutex.unlock();
}

// Under g_mutex: the session started becomes the running one.
// `for_scrapes`: started by a scrape, for scrapes alone (they stop it).
Status start_locked(const Options& options, bool taps_only, bool for_scrapes) {
  Status status;
  auto session = internal::Session::start(options, &status, taps_only);
  if (!session) return status;
  g_session = session.release();
  g_pull_owned = for_scrapes;
  g_running.store(true);
  attach_allocation_tap();
  // So that a program that returns from main or calls exit() without stop() keeps its samples.
  static std::once_flag hooks_registered;
  std::call_once(hooks_registered, [] {
    std::atexit(stop_at_exit);
    internal::call_around_fork(prepare_fork, parent_after_fork, child_after_fork);
  });
  return {};
}

}  // namespace

Status internal::here::start(const Options& options) {
  std::lock_guard lock(g_mutex);
  if (g_session != nullptr) {
    return Status::error(Status::Code::kAlreadyRunning,
                         g_pull_owned ? "a pull-mode scrape is profiling; start() again after it"
                                      : "the profiler is already running; stop() it first");
  }
  return start_locked(options, /*taps_only=*/false, /*for_scrapes=*/false);
}

Status internal::here::start_for_scrapes(const Options& options) {
  std::lock_guard lock(g_mutex);
  if (g_session != nullptr) {
    return Status::error(Status::Code::kAlreadyRunning,
                         "the profiler is already running; stop() it first");
  }
  return start_locked(options, /*taps_only=*/true, /*for_scrapes=*/false);
}

void internal::here::set_allocation_tap(internal::RecordTap* tap) {
  std::lock_guard lock(g_mutex);
  if (g_allocation_tap && g_session) g_session->detach_tap(g_allocation_tap);
  g_allocation_tap = tap;
  attach_allocation_tap();
}

Status internal::here::attach_scrape(internal::RecordTap* tap, const Options& options) {
  std::lock_guard lock(g_mutex);
  if (g_session == nullptr) {
    Status started = start_locked(options, /*taps_only=*/true, /*for_scrapes=*/true);
    if (!started.ok()) return started;
  } else if (g_session->ring_mode()) {
    return Status::error(Status::Code::kAlreadyRunning,
                         "the profiler runs as a flight recorder (ring mode), which a scrape "
                         "cannot read; stream mode can");
  }
  g_session->attach_tap(tap);
  ++g_scrapes;
  return {};
}

void internal::here::finish_scrape(internal::RecordTap* tap, bool drain) {
  std::lock_guard lock(g_mutex);
  if (g_scrapes > 0) --g_scrapes;
  if (g_session == nullptr) return;  // stopped: the tap was told (RecordTap::session_ended)
  if (drain) (void)g_session->drain_for_taps(1000000000);
  g_session->detach_tap(tap);
  if (g_pull_owned && g_scrapes == 0) (void)stop_locked(/*at_exit=*/false);
}

Status internal::here::stop() { return stop_session(/*at_exit=*/false); }

bool internal::here::is_running() { return g_running.load(); }

Status internal::here::capture(const std::string& path) {
  std::lock_guard lock(g_mutex);
  if (g_session == nullptr) {
    return Status::error(Status::Code::kNotRunning, "the profiler is not running");
  }
  return g_session->capture(path);
}

Status internal::here::pause() {
  std::lock_guard lock(g_mutex);
  if (g_session == nullptr) {
    return Status::error(Status::Code::kNotRunning, "the profiler is not running");
  }
  g_session->pause();
  return {};
}

Status internal::here::resume() {
  std::lock_guard lock(g_mutex);
  if (g_session == nullptr) {
    return Status::error(Status::Code::kNotRunning, "the profiler is not running");
  }
  g_session->resume();
  return {};
}

ProfileScope::ProfileScope(const Options& options) : status_(Profiler::start(options)) {}

ProfileScope::~ProfileScope() {
  if (status_.ok()) (void)Profiler::stop();
}

void internal::here::set_thread_name(std::string_view name) {
  internal::ThreadNames::instance().set(internal::current_thread_id(), name);
}

void internal::here::register_thread(std::string_view name) {
  auto& names = internal::ThreadNames::instance();
  const uint64_t tid = internal::current_thread_id();
  names.set(tid, name);
  names.choose(tid, internal::ThreadNames::Choice::kAlways);
}

void internal::here::unregister_thread() {
  internal::ThreadNames::instance().choose(internal::current_thread_id(),
                                           internal::ThreadNames::Choice::kNever);
}

// The API: this copy's own implementation, or the primary copy's (copies.h).
namespace {
// start() calls that found the primary's session already running (started by another copy: a
// preloaded `inprof record`): they joined it, and their stop() leaves it running.
std::atomic<int> g_joined{0};
}  // namespace

Status Profiler::start(const Options& options) {
  const internal::CopyInterface* primary = internal::primary_copy();
  if (!primary) return internal::here::start(options);
  Status status = primary->start(options);
  if (status.code() == Status::Code::kAlreadyRunning) {
    g_joined.fetch_add(1);
    return {};  // one session: the one running records this program's markers too
  }
  return status;
}

Status Profiler::stop() {
  const internal::CopyInterface* primary = internal::primary_copy();
  if (!primary) return internal::here::stop();
  for (int joined = g_joined.load(); joined > 0;) {
    if (g_joined.compare_exchange_weak(joined, joined - 1)) return {};
  }
  return primary->stop();
}

bool Profiler::is_running() {
  const internal::CopyInterface* primary = internal::primary_copy();
  return primary ? primary->is_running() : internal::here::is_running();
}

Status Profiler::capture(const std::string& path) {
  const internal::CopyInterface* primary = internal::primary_copy();
  return primary ? primary->capture(path) : internal::here::capture(path);
}

Status Profiler::pause() {
  const internal::CopyInterface* primary = internal::primary_copy();
  return primary ? primary->pause() : internal::here::pause();
}

Status Profiler::resume() {
  const internal::CopyInterface* primary = internal::primary_copy();
  return primary ? primary->resume() : internal::here::resume();
}

void set_thread_name(std::string_view name) {
  const internal::CopyInterface* primary = internal::primary_copy();
  primary ? primary->set_thread_name(name) : internal::here::set_thread_name(name);
}

void register_thread(std::string_view name) {
  const internal::CopyInterface* primary = internal::primary_copy();
  primary ? primary->register_thread(name) : internal::here::register_thread(name);
}

void unregister_thread() {
  const internal::CopyInterface* primary = internal::primary_copy();
  primary ? primary->unregister_thread() : internal::here::unregister_thread();
}

const char* version() { return INPROF_VERSION_STRING; }

}  // namespace inprof
