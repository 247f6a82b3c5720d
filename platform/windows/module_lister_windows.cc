// Modules from EnumProcessModules, their identity (PDB debug id or PE code id) and load bias read
// from the mapped PE image itself (pe_image_windows.h).
// Change notifications come from LdrRegisterDllNotification (ntdll, Vista and later; Wine).
// <windows.h> must come before the other Windows headers.
// clang-format off
#include <windows.h>
#include <psapi.h>
// clang-format on

#include <atomic>

#include "dump/dump_records.h"
#include "pe_image_windows.h"
#include "sampling/module_lister.h"
#include "text_windows.h"

namespace inprof::internal {
namespace {

std::atomic<uint32_t> g_module_events{0};

// The notification's data is not needed: only that something was loaded or unloaded.
// It runs under the loader lock, so it only bumps a counter.
VOID CALLBACK on_dll_notification(ULONG, const void*, PVOID) {
  g_module_events.fetch_add(1, std::memory_order_relaxed);
}

using LdrRegisterDllNotificationFn = LONG(NTAPI*)(ULONG, decltype(&on_dll_notification), PVOID,
                                                  PVOID*);

bool register_notification() {
  const auto registrar = reinterpret_cast<LdrRegisterDllNotificationFn>(reinterpret_cast<void*>(
      GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "LdrRegisterDllNotification")));
  PVOID cookie = nullptr;  // never unregistered: the callback only touches a static counter
  return registrar != nullptr && registrar(0, on_dll_notification, nullptr, &cookie) == 0;
}

class WindowsModuleLister final : public ModuleLister {
 public:
  WindowsModuleLister() : notified_(register_notification()) {}

  bool changed() override {
    if (!listed_) return true;
    if (notified_) return g_module_events.load(std::memory_order_relaxed) != seen_events_;
    // Without notifications: compare the module handles, which is what list() costs anyway.
    std::vector<HMODULE> now;
    return !enumerate(now) || now != seen_handles_;
  }

  void list(std::vector<ModuleInfo>& modules) override {
    seen_events_ = g_module_events.load(std::memory_order_relaxed);
    listed_ = true;
    modules.clear();
    if (!enumerate(seen_handles_)) return;
    const HMODULE executable = GetModuleHandleW(nullptr);
    for (HMODULE handle : seen_handles_) {
      // A reference of our own keeps the image mapped while its headers are read: another
      // thread may unload it at any moment.
      HMODULE pinned = nullptr;
      if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
                              reinterpret_cast<LPCWSTR>(handle), &pinned) ||
          pinned != handle) {
        if (pinned != nullptr) FreeLibrary(pinned);
        continue;
      }
      ModuleInfo m;
      if (describe_pe_image(reinterpret_cast<const uint8_t*>(handle), m)) {
        std::wstring path(MAX_PATH, L'\0');
        const DWORD n = GetModuleFileNameW(handle, path.data(), static_cast<DWORD>(path.size()));
        m.path = to_utf8(path.data(), static_cast<int>(n));
        if (handle == executable) m.flags |= kModuleMainExecutable;
        modules.push_back(std::move(m));
      }
      FreeLibrary(pinned);
    }
  }

 private:
  static bool enumerate(std::vector<HMODULE>& handles) {
    handles.resize(256);
    for (;;) {
      DWORD needed = 0;
      const DWORD bytes = static_cast<DWORD>(handles.size() * sizeof(HMODULE));
      if (!EnumProcessModules(GetCurrentProcess(), handles.data(), bytes, &needed)) return false;
      if (needed <= bytes) {
        handles.resize(needed / sizeof(HMODULE));
        return true;
      }
      handles.resize(needed / sizeof(HMODULE) + 16);
    }
  }

  const bool notified_;
  bool listed_ = false;
  uint32_t seen_events_ = 0;
  std::vector<HMODULE> seen_handles_;
};

}  // namespace

std::unique_ptr<ModuleLister> ModuleLister::create() {
  return std::make_unique<WindowsModuleLister>();
}

std::span<const uint8_t> vdso_image(uint64_t, uint64_t) { return {}; }  // Windows has none

}  // namespace inprof::internal
