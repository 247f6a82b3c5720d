// Modules from EnumProcessModules, their identity read from the mapped PE image itself:
// - build_id: the CodeView (RSDS) record's GUID (16 bytes, as stored) then its age (4 bytes,
//   little-endian) — the PDB debug id, which MSVC always writes and MinGW's ld writes with
//   --build-id; without one, the PE code id: TimeDateStamp then SizeOfImage (4 + 4 bytes, LE).
//   Lengths 20 and 8 tell the two apart.
// - load_bias: where the image is minus its preferred ImageBase, so that an address minus the
//   bias is the virtual address its debug information (DWARF or PDB) uses, as with ELF.
// Change notifications come from LdrRegisterDllNotification (ntdll, Vista and later; Wine).
// <windows.h> must come before the other Windows headers.
// clang-format off
#include <windows.h>
#include <psapi.h>
// clang-format on

#include <atomic>
#include <cstring>

#include "dump/dump_records.h"
#include "module_lister.h"
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

struct CodeViewRsds {
  uint32_t signature;  // 'RSDS'
  uint8_t guid[16];
  uint32_t age;
};

// Reads the identity and code ranges from the headers of the image mapped at `base`. The
// loader validated them when it mapped the image.
bool describe_image(const uint8_t* base, ModuleInfo& m) {
  const auto* dos = reinterpret_cast<const IMAGE_DOS_HEADER*>(base);
  if (dos->e_magic != IMAGE_DOS_SIGNATURE) return false;
  const auto* nt = reinterpret_cast<const IMAGE_NT_HEADERS64*>(base + dos->e_lfanew);
  if (nt->Signature != IMAGE_NT_SIGNATURE ||
      nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC) {
    return false;
  }
  const IMAGE_OPTIONAL_HEADER64& optional = nt->OptionalHeader;
  const auto start = reinterpret_cast<uint64_t>(base);
  m.start = start;
  m.end = start + optional.SizeOfImage;
  m.load_bias = start - optional.ImageBase;
  m.file_offset = 0;

  const IMAGE_SECTION_HEADER* section = IMAGE_FIRST_SECTION(nt);
  for (WORD i = 0; i < nt->FileHeader.NumberOfSections; ++i, ++section) {
    if (section->Characteristics & IMAGE_SCN_MEM_EXECUTE) {
      const uint64_t begin = start + section->VirtualAddress;
      m.code_ranges.emplace_back(begin, begin + section->Misc.VirtualSize);
    }
  }

  if (optional.NumberOfRvaAndSizes > IMAGE_DIRECTORY_ENTRY_DEBUG) {
    const IMAGE_DATA_DIRECTORY& dir = optional.DataDirectory[IMAGE_DIRECTORY_ENTRY_DEBUG];
    const auto* entry = reinterpret_cast<const IMAGE_DEBUG_DIRECTORY*>(base + dir.VirtualAddress);
    const size_t count = dir.VirtualAddress ? dir.Size / sizeof(IMAGE_DEBUG_DIRECTORY) : 0;
    for (size_t i = 0; i < count; ++i, ++entry) {
      if (entry->Type != IMAGE_DEBUG_TYPE_CODEVIEW || entry->AddressOfRawData == 0 ||
          entry->SizeOfData < sizeof(CodeViewRsds) ||
          entry->AddressOfRawData + sizeof(CodeViewRsds) > optional.SizeOfImage) {
        continue;
      }
      CodeViewRsds rsds;
      std::memcpy(&rsds, base + entry->AddressOfRawData, sizeof(rsds));
      if (rsds.signature != 0x53445352) continue;  // "RSDS"
      m.build_id.assign(rsds.guid, rsds.guid + 16);
      for (int b = 0; b < 4; ++b) m.build_id.push_back(uint8_t(rsds.age >> (8 * b)));
      return true;
    }
  }
  for (uint32_t value : {uint32_t(nt->FileHeader.TimeDateStamp), uint32_t(optional.SizeOfImage)}) {
    for (int b = 0; b < 4; ++b) m.build_id.push_back(uint8_t(value >> (8 * b)));
  }
  return true;
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
      if (describe_image(reinterpret_cast<const uint8_t*>(handle), m)) {
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

}  // namespace inprof::internal
