// Threads from NtGetNextThread (or a Toolhelp snapshot); CPU time from the thread's times and
// cycle counter.
// <windows.h> must come before the other Windows headers.
// clang-format off
#include <windows.h>
#include <tlhelp32.h>
// clang-format on

#include <algorithm>
#include <unordered_map>

#include "sampling/thread_lister.h"
#include "session/process_info.h"
#include "text_windows.h"

namespace inprof::internal {
namespace {

using GetThreadDescriptionFn = HRESULT(WINAPI*)(HANDLE, PWSTR*);
using NtGetNextThreadFn = LONG(NTAPI*)(HANDLE process, HANDLE thread, ACCESS_MASK access,
                                       ULONG attributes, ULONG flags, HANDLE* next);

uint64_t filetime_100ns(const FILETIME& t) {
  return (uint64_t(t.dwHighDateTime) << 32) | t.dwLowDateTime;
}

class WindowsThreadLister final : public ThreadLister {
 public:
  ~WindowsThreadLister() override {
    for (auto& [tid, state] : threads_) CloseHandle(state.handle);
  }

  // NtGetNextThread walks this process's threads only (Vista and later; Wine); a Toolhelp
  // snapshot covers every thread of the system, which costs milliseconds (7.9 ms under Wine).
  bool list(std::vector<uint64_t>& tids) override {
    tids.clear();
    if (next_thread_ == nullptr) return list_with_toolhelp(tids);
    HANDLE thread = nullptr;
    for (;;) {
      HANDLE next = nullptr;
      const LONG status =
          next_thread_(GetCurrentProcess(), thread, THREAD_QUERY_LIMITED_INFORMATION, 0, 0, &next);
      if (thread != nullptr) CloseHandle(thread);
      if (status != 0) break;  // STATUS_NO_MORE_ENTRIES
      thread = next;
      const DWORD tid = GetThreadId(thread);
      if (tid != 0) tids.push_back(tid);
    }
    return true;
  }

  // Kernel + user time, which Windows advances only at clock ticks (15.6 ms by default; Wine
  // reads Linux's 10 ms ticks): a thread that ran less than a tick would look idle, and the
  // sampler would repeat its previous stack. The cycle counter is exact but has no fixed unit, so
  // it only decides whether the thread ran: if it did and the times did not move, the time
  // reported still grows by 1 ns. Where the counter does not work (Wine's stub reports 0), the
  // thread is taken to have run: a full sample is always right, a repeat only if it was idle.
  std::optional<uint64_t> cpu_time_ns(uint64_t tid) override {
    ThreadState* state = find(tid);
    if (state == nullptr) return std::nullopt;
    // No exit check here (one system call less per sample): a thread that has exited fails the
    // stack copy, and the next listing ends it. The times move in ticks anyway, so they are read
    // at most every 4 ms per thread: under Wine each read costs about 3 ms.
    const uint64_t now = monotonic_ns();
    if (!state->read_before || now - state->times_read_at_ns >= kTimesRefreshNs) {
      FILETIME created, exited, kernel, user;
      if (!GetThreadTimes(state->handle, &created, &exited, &kernel, &user)) return std::nullopt;
      state->times_ns = (filetime_100ns(kernel) + filetime_100ns(user)) * 100;
      state->times_read_at_ns = now;
    }
    const uint64_t times_ns = state->times_ns;
    ULONG64 cycles = 0;
    const bool cycles_known = QueryThreadCycleTime(state->handle, &cycles) && cycles != 0;
    const bool ran = !cycles_known || cycles != state->last_cycles;
    uint64_t reported = std::max(times_ns, state->last_reported_ns);
    if (state->read_before && ran && reported == state->last_reported_ns) reported += 1;
    state->last_cycles = cycles;
    state->last_reported_ns = reported;
    state->read_before = true;
    return reported;
  }

  // The thread's description (SetThreadDescription, Windows 10 1607 and Wine), looked up at run
  // time. The main thread has none unless the program gave it one: like Linux's, it is then named
  // after the program (its .exe file). Other threads without one: empty.
  std::string name(uint64_t tid) override {
    std::string described = description(tid);
    if (described.empty() && tid == main_thread_id()) {
      static const std::string program = [] {
        const std::string path = executable_path();
        return path.substr(path.find_last_of("\\/") + 1);
      }();
      return program;
    }
    return described;
  }

  void forget(uint64_t tid) override {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return;
    CloseHandle(it->second.handle);
    threads_.erase(it);
  }

 private:
  // SetThreadDescription's text, or empty.
  std::string description(uint64_t tid) {
    static const auto get_description =
        reinterpret_cast<GetThreadDescriptionFn>(reinterpret_cast<void*>(
            GetProcAddress(GetModuleHandleW(L"kernel32.dll"), "GetThreadDescription")));
    ThreadState* state = find(tid);
    if (get_description == nullptr || state == nullptr) return {};
    PWSTR text = nullptr;
    if (FAILED(get_description(state->handle, &text)) || text == nullptr) return {};
    std::string name = to_utf8(text);
    LocalFree(text);
    return name;
  }

  struct ThreadState {
    HANDLE handle;
    uint64_t last_reported_ns = 0;
    ULONG64 last_cycles = 0;
    bool read_before = false;
    uint64_t times_ns = 0;  // kernel + user time as last read, and when
    uint64_t times_read_at_ns = 0;
  };

  // One handle per thread, kept until forget(): opening it every tick would cost a system call.
  ThreadState* find(uint64_t tid) {
    auto it = threads_.find(tid);
    if (it != threads_.end()) return &it->second;
    HANDLE handle = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, static_cast<DWORD>(tid));
    if (handle == nullptr) return nullptr;
    return &threads_.emplace(tid, ThreadState{handle}).first->second;
  }

  bool list_with_toolhelp(std::vector<uint64_t>& tids) {
    HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
    if (snapshot == INVALID_HANDLE_VALUE) return false;
    THREADENTRY32 entry;
    entry.dwSize = sizeof(entry);
    for (BOOL ok = Thread32First(snapshot, &entry); ok; ok = Thread32Next(snapshot, &entry)) {
      if (entry.th32OwnerProcessID == pid_) tids.push_back(entry.th32ThreadID);
    }
    CloseHandle(snapshot);
    return true;
  }

  static constexpr uint64_t kTimesRefreshNs = 4000000;

  const DWORD pid_ = GetCurrentProcessId();
  const NtGetNextThreadFn next_thread_ = reinterpret_cast<NtGetNextThreadFn>(
      reinterpret_cast<void*>(GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "NtGetNextThread")));
  std::unordered_map<uint64_t, ThreadState> threads_;
};

}  // namespace

std::unique_ptr<ThreadLister> ThreadLister::create() {
  return std::make_unique<WindowsThreadLister>();
}

}  // namespace inprof::internal
