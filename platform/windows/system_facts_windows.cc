// <windows.h> must come before the other Windows headers.
// clang-format off
#include <windows.h>
// clang-format on

#include <string>
#include <vector>

#include "session/system_facts.h"
#include "text_windows.h"

namespace inprof::internal {
namespace {

// GetVersionEx reports what the program's manifest asks for; ntdll's RtlGetVersion does not.
std::string windows_version() {
  using RtlGetVersionFn = LONG(WINAPI*)(OSVERSIONINFOW*);
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  if (ntdll == nullptr) return {};
  auto get = reinterpret_cast<RtlGetVersionFn>(
      reinterpret_cast<void*>(GetProcAddress(ntdll, "RtlGetVersion")));
  OSVERSIONINFOW info{};
  info.dwOSVersionInfoSize = sizeof(info);
  if (get == nullptr || get(&info) != 0) return {};
  return std::to_string(info.dwMajorVersion) + "." + std::to_string(info.dwMinorVersion) + "." +
         std::to_string(info.dwBuildNumber);
}

std::string registry_string(const wchar_t* key, const wchar_t* value) {
  wchar_t buffer[256];
  DWORD size = sizeof(buffer);
  if (RegGetValueW(HKEY_LOCAL_MACHINE, key, value, RRF_RT_REG_SZ, nullptr, buffer, &size) !=
      ERROR_SUCCESS) {
    return {};
  }
  std::string text = to_utf8(buffer);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

void read_system_facts(ProcessRecord& process) {
  process.os_name = "Windows";
  process.os_release = windows_version();
  process.cpu_name = registry_string(L"HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0",
                                     L"ProcessorNameString");
  SYSTEM_INFO system;
  GetNativeSystemInfo(&system);
  process.logical_cpus = system.dwNumberOfProcessors;
  DWORD bytes = 0;
  GetLogicalProcessorInformation(nullptr, &bytes);
  std::vector<SYSTEM_LOGICAL_PROCESSOR_INFORMATION> entries(
      bytes / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION));
  if (!entries.empty() && GetLogicalProcessorInformation(entries.data(), &bytes)) {
    uint64_t cores = 0;
    for (const auto& e : entries) cores += e.Relationship == RelationProcessorCore;
    process.physical_cpus = cores;
  }
  MEMORYSTATUSEX memory{};
  memory.dwLength = sizeof(memory);
  if (GlobalMemoryStatusEx(&memory)) process.memory_bytes = memory.ullTotalPhys;
}

}  // namespace inprof::internal
