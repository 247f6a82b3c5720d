// Process facts and clocks on Windows.
// <windows.h> must come before the other Windows headers.
// clang-format off
#include <windows.h>
#include <shellapi.h>
#include <tlhelp32.h>
// clang-format on

#include <algorithm>
#include <cstdio>
#include <string>

#include "session/process_info.h"
#include "text_windows.h"

namespace inprof::internal {
namespace {

// The thread created first: Windows has no "main thread id" (the pid is no thread's id).
uint64_t find_first_thread() {
  const DWORD pid = GetCurrentProcessId();
  HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  if (snapshot == INVALID_HANDLE_VALUE) return GetCurrentThreadId();
  uint64_t first = GetCurrentThreadId();
  ULONGLONG first_created = ~0ull;
  THREADENTRY32 entry;
  entry.dwSize = sizeof(entry);
  for (BOOL ok = Thread32First(snapshot, &entry); ok; ok = Thread32Next(snapshot, &entry)) {
    if (entry.th32OwnerProcessID != pid) continue;
    HANDLE thread = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, entry.th32ThreadID);
    if (thread == nullptr) continue;
    FILETIME created, exited, kernel, user;
    if (GetThreadTimes(thread, &created, &exited, &kernel, &user)) {
      const ULONGLONG t = (ULONGLONG(created.dwHighDateTime) << 32) | created.dwLowDateTime;
      if (t < first_created) {
        first_created = t;
        first = entry.th32ThreadID;
      }
    }
    CloseHandle(thread);
  }
  CloseHandle(snapshot);
  return first;
}

uint64_t performance_frequency() {
  LARGE_INTEGER f;
  QueryPerformanceFrequency(&f);
  return static_cast<uint64_t>(f.QuadPart);
}

using SetThreadDescriptionFn = HRESULT(WINAPI*)(HANDLE, PCWSTR);

}  // namespace

uint64_t process_id() { return GetCurrentProcessId(); }
uint64_t current_thread_id() { return GetCurrentThreadId(); }
uint64_t main_thread_id() {
  static const uint64_t id = find_first_thread();
  return id;
}
const char* os_name() { return "windows"; }

std::string executable_path() {
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
    if (n == 0) return {};
    if (n < path.size()) return to_utf8(path.data(), static_cast<int>(n));
    path.resize(path.size() * 2);
  }
}

std::vector<std::string> command_line() {
  std::vector<std::string> args;
  int argc = 0;
  LPWSTR* argv = CommandLineToArgvW(GetCommandLineW(), &argc);
  if (argv == nullptr) return args;
  for (int i = 0; i < argc; ++i) args.push_back(to_utf8(argv[i]));
  LocalFree(argv);
  return args;
}

// QueryPerformanceCounter: lock-free, so usable while a thread is suspended.
uint64_t current_thread_cpu_ns() {
  FILETIME created, exited, kernel, user;
  if (!GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user)) return 0;
  const auto ticks = [](const FILETIME& f) {
    return (uint64_t(f.dwHighDateTime) << 32) | f.dwLowDateTime;
  };
  return (ticks(kernel) + ticks(user)) * 100;  // 100 ns units
}

uint64_t monotonic_ns() {
  static const uint64_t frequency = performance_frequency();
  LARGE_INTEGER counter;
  QueryPerformanceCounter(&counter);
  const uint64_t ticks = static_cast<uint64_t>(counter.QuadPart);
  // Seconds and remainder apart: ticks * 1e9 overflows after ~30 min at 10 MHz.
  return ticks / frequency * 1000000000u + ticks % frequency * 1000000000u / frequency;
}

uint64_t wall_clock_ns() {
  FILETIME ft;
  GetSystemTimePreciseAsFileTime(&ft);
  const uint64_t since_1601 = (uint64_t(ft.dwHighDateTime) << 32) | ft.dwLowDateTime;
  constexpr uint64_t kUnixEpochIn1601 = 116444736000000000ull;  // 100 ns units
  return since_1601 >= kUnixEpochIn1601 ? (since_1601 - kUnixEpochIn1601) * 100 : 0;
}

// ReadProcessMemory on ourselves fails instead of faulting. Page by page, so the bytes before
// the first unreadable page are kept.
size_t read_memory(uint64_t address, void* out, size_t size) {
  constexpr uint64_t kPage = 4096;
  size_t done = 0;
  while (done < size) {
    const uint64_t at = address + done;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, kPage - at % kPage));
    SIZE_T got = 0;
    if (!ReadProcessMemory(GetCurrentProcess(), reinterpret_cast<const void*>(at),
                           static_cast<char*>(out) + done, chunk, &got) ||
        got != chunk) {
      return done + got;
    }
    done += chunk;
  }
  return done;
}

// Windows threads are not sampled with signals, and the C runtime's few signals (SIGINT, SIGTERM,
// ...) cannot be sent to a process from outside: no signal option names anything here.
int signal_number(const std::string&) { return 0; }

// SetThreadDescription exists from Windows 10 1607 (and in Wine); looked up, not linked.
void setup_profiler_thread(const char* name) {
  static const auto set_description =
      reinterpret_cast<SetThreadDescriptionFn>(reinterpret_cast<void*>(
          GetProcAddress(GetModuleHandleW(L"kernel32.dll"), "SetThreadDescription")));
  if (set_description != nullptr) set_description(GetCurrentThread(), to_wide(name).c_str());
}

}  // namespace inprof::internal

namespace inprof::internal {

// One descriptor table per process here: the checks before each use are what protect it.
bool use_private_descriptor_table(int) { return false; }

void say_on_stderr(const std::string& line) { std::fputs(line.c_str(), stderr); }

void call_around_fork(void (*)(), void (*)(), void (*)()) {}  // no fork on Windows

}  // namespace inprof::internal
