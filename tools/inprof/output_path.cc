#include "output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "options/env_options.h"

namespace inprof::launcher {

std::optional<std::string> resolve_output_path(std::string* pattern, uint64_t pid) {
  if (pattern->empty()) return "empty path";
  if ((*pattern)[0] != '/') {
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) return "the current directory is gone: give an absolute path";
    *pattern = (cwd / *pattern).string();
  }
  // The library expands %p the same way; the program's own dump is checked (children may differ
  // only in the pid).
  const std::string path = internal::expand_output_path(*pattern, pid);
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "is a directory";
  if (path.back() == '/') return "ends in '/': give a file name";
  const size_t slash = path.rfind('/');
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  if (stat(dir.c_str(), &st) != 0) return "no such directory: " + dir;
  if (!S_ISDIR(st.st_mode)) return "not a directory: " + dir;
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return "cannot write in " + dir + ": " + std::strerror(errno);
  }
  return std::nullopt;
}

}  // namespace inprof::launcher
