// A path another live process is writing (two profiled processes given the same INPROF_OUTPUT:
// `sh -c 'a; b'`, `timeout`, `make`) is never shared: both dumps would be lost.
#include "output_file.h"

#include <cstdio>

#include "process_info.h"

namespace inprof::internal {

std::string OutputFile::pid_suffixed_path(const std::string& path, uint64_t pid) {
  const std::string suffix = "-" + std::to_string(pid);
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.rfind('.');
  // No extension (a dot only in a directory's name, or a leading dot): the suffix goes last.
  if (dot == std::string::npos || dot <= name) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

std::unique_ptr<OutputFile> OutputFile::create_unshared(const std::string& path, Status* status,
                                                        std::string* actual_path) {
  *actual_path = path;
  bool held_elsewhere = false;
  auto file = create(path, status, &held_elsewhere);
  if (file || !held_elsewhere) return file;
  const std::string own = pid_suffixed_path(path, process_id());
  file = create(own, status);
  if (!file) return file;
  *actual_path = own;
  std::fprintf(stderr,
               "inprof: %s is being written by another process; this one (%llu) writes %s\n",
               path.c_str(), static_cast<unsigned long long>(process_id()), own.c_str());
  return file;
}

}  // namespace inprof::internal
