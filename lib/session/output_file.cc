// A path another live process is writing (two profiled processes given the same INPROF_OUTPUT:
// `sh -c 'a; b'`, `timeout`, `make`) is never shared: both dumps would be lost.
#include "session/output_file.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "session/process_info.h"

namespace inprof::internal {
namespace {

// The paths this image (this program since its execve) has written: a second session of the
// same image writes over its own dump as before; only a dump of an earlier image is kept. Leaked:
// no destructor may race with a session stopped at exit.
std::mutex& written_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::vector<std::string>& written_paths() {
  static auto* paths = new std::vector<std::string>;
  return *paths;
}

bool written_by_this_image(const std::string& path) {
  std::lock_guard lock(written_mutex());
  const auto& paths = written_paths();
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

void note_written(const std::string& path) {
  std::lock_guard lock(written_mutex());
  auto& paths = written_paths();
  if (std::find(paths.begin(), paths.end(), path) == paths.end() && paths.size() < 4096) {
    paths.push_back(path);
  }
}

// "dir/app.inprof" -> "dir/app" + suffix + ".inprof"; no extension: the suffix goes last.
std::string suffixed(const std::string& path, const std::string& suffix) {
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.rfind('.');
  // A dot only in a directory's name, or a leading dot, is no extension.
  if (dot == std::string::npos || dot <= name) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

}  // namespace

std::string OutputFile::pid_suffixed_path(const std::string& path, uint64_t pid) {
  return suffixed(path, "-" + std::to_string(pid));
}

std::string OutputFile::exec_suffixed_path(const std::string& path, int n) {
  return suffixed(path, "-exec" + std::to_string(n));
}

std::unique_ptr<OutputFile> OutputFile::create_unshared(const std::string& requested,
                                                        Status* status, std::string* actual_path,
                                                        std::string* earlier_image) {
  // An image that replaced an earlier one of this process (execve) keeps the earlier image's
  // dump: it writes the first free "-execN" name beside it.
  std::string path = requested, earlier;
  for (int n = 1; n < 1000 && !written_by_this_image(path) && written_by_earlier_image(path); ++n) {
    earlier = path;
    path = exec_suffixed_path(requested, n);
  }
  if (!earlier.empty()) {
    say_on_stderr("inprof: " + earlier +
                  " holds this process's profile from before exec; this "
                  "image writes " +
                  path + "\n");
  }
  if (earlier_image) *earlier_image = earlier;
  *actual_path = path;
  bool held_elsewhere = false;
  auto file = create(path, status, &held_elsewhere);
  if (file) note_written(path);
  if (file || !held_elsewhere) return file;
  const std::string own = pid_suffixed_path(path, process_id());
  file = create(own, status);
  if (!file) return file;
  note_written(own);
  *actual_path = own;
  say_on_stderr("inprof: " + path + " is being written by another process; this one (" +
                std::to_string(process_id()) + ") writes " + own + "\n");
  return file;
}

}  // namespace inprof::internal
