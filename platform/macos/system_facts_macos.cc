// Machine facts on macOS, from sysctl.
#include <string>

#include "darwin_declarations_macos.h"
#include "session/system_facts.h"

namespace inprof::internal {
namespace {

namespace d = darwin;

std::string sysctl_string(const char* name) {
  char buffer[256] = {};
  size_t size = sizeof(buffer) - 1;
  if (d::sysctlbyname(name, buffer, &size, nullptr, 0) != 0) return {};
  return buffer;
}

template <typename T>
T sysctl_number(const char* name) {
  T value{};
  size_t size = sizeof(value);
  if (d::sysctlbyname(name, &value, &size, nullptr, 0) != 0 || size != sizeof(value)) return T{};
  return value;
}

}  // namespace

void read_system_facts(ProcessRecord& process) {
  process.os_name = "macOS";
  process.os_release = sysctl_string("kern.osproductversion");
  process.cpu_name = sysctl_string("machdep.cpu.brand_string");
  process.logical_cpus = static_cast<uint32_t>(sysctl_number<int32_t>("hw.logicalcpu"));
  process.physical_cpus = static_cast<uint32_t>(sysctl_number<int32_t>("hw.physicalcpu"));
  process.memory_bytes = sysctl_number<uint64_t>("hw.memsize");
}

}  // namespace inprof::internal
