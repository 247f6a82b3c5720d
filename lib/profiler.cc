// The public API: one process-wide session behind a mutex.
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "inprof/profiler.h"
#include "process_info.h"
#include "session.h"
#include "thread_names.h"

namespace inprof {
namespace {

std::mutex g_mutex;
// Leaked on purpose: a session still running at exit is stopped by the atexit hook, and static
// destructors must not race with it.
internal::Session* g_session = nullptr;
std::atomic<bool> g_running{false};

void stop_at_exit() {
  if (g_running.load()) (void)Profiler::stop();
}

}  // namespace

Status Profiler::start(const Options& options) {
  std::lock_guard lock(g_mutex);
  if (g_session != nullptr) {
    return Status::error(Status::Code::kAlreadyRunning,
                         "the profiler is already running; stop() it first");
  }
  Status status;
  auto session = internal::Session::start(options, &status);
  if (!session) return status;
  g_session = session.release();
  g_running.store(true);
  // So that a program that returns from main or calls exit() without stop() keeps its samples.
  static std::once_flag at_exit_registered;
  std::call_once(at_exit_registered, [] { std::atexit(stop_at_exit); });
  return {};
}

Status Profiler::stop() {
  std::lock_guard lock(g_mutex);
  if (g_session == nullptr) {
    return Status::error(Status::Code::kNotRunning, "the profiler is not running");
  }
  std::unique_ptr<internal::Session> session(g_session);
  g_session = nullptr;
  g_running.store(false);
  return session->stop();
}

bool Profiler::is_running() { return g_running.load(); }

ProfileScope::ProfileScope(const Options& options) : status_(Profiler::start(options)) {}

ProfileScope::~ProfileScope() {
  if (status_.ok()) (void)Profiler::stop();
}

void set_thread_name(std::string_view name) {
  internal::ThreadNames::instance().set(internal::current_thread_id(), name);
}

const char* version() { return INPROF_VERSION_STRING; }

}  // namespace inprof
