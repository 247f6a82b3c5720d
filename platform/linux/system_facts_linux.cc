#include <sys/utsname.h>
#include <unistd.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "file_util_linux.h"
#include "session/system_facts.h"

namespace inprof::internal {
namespace {

// The value of `key` in text made of "key<separator>value" lines, trimmed; "" if absent.
std::string value_of(std::string_view text, std::string_view key, char separator) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() != separator) continue;
    line.remove_prefix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '"')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '"' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    return std::string(line);
  }
  return {};
}

std::string first_line(const std::string& path) {
  std::string text;
  if (!read_small_file(path.c_str(), &text, 4096)) return {};
  return text.substr(0, text.find('\n'));
}

}  // namespace

void read_system_facts(ProcessRecord& process) {
  std::string text;
  if (read_small_file("/etc/os-release", &text, 64 * 1024) ||
      read_small_file("/usr/lib/os-release", &text, 64 * 1024)) {
    process.os_name = value_of(text, "PRETTY_NAME", '=');
  }
  utsname u;
  if (uname(&u) == 0) process.os_release = u.release;
  // The first processor's entry is enough (x86: "model name"; aarch64 has none).
  if (read_small_file("/proc/cpuinfo", &text, 16 * 1024)) {
    process.cpu_name = value_of(text, "model name", ':');
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) process.logical_cpus = static_cast<uint64_t>(online);
  // Cores: distinct (package, core) pairs among the CPUs present.
  std::set<std::pair<std::string, std::string>> cores;
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  for (long cpu = 0; cpu < configured && cpu < 65536; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::string package = first_line(dir + "physical_package_id");
    std::string core = first_line(dir + "core_id");
    if (!core.empty()) cores.emplace(std::move(package), std::move(core));
  }
  process.physical_cpus = cores.size();
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    process.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }
}

}  // namespace inprof::internal
