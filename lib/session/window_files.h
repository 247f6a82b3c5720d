// Continuous mode's files (Options::rotate_interval): the name of each window's dump, from the
// output path's pattern, and the bound on how many are kept (Options::keep_files). Used by the
// writer thread only.
#ifndef INPROF_LIB_WINDOW_FILES_H_
#define INPROF_LIB_WINDOW_FILES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace inprof::internal {

class WindowFiles {
 public:
  // `pattern`: the output path; %p becomes `pid`, %n the window's number (from 1), %t its start
  // time (UTC, 20261126T045000Z), %% a '%'. Without %n or %t, "-%n" goes before
  // the extension, so that windows never share a file. `keep`: how many files are kept (0: all).
  WindowFiles(std::string pattern, size_t keep, uint64_t pid);

  // The path of window `number`, which starts at `start_unix_ns`.
  std::string path(uint64_t number, uint64_t start_unix_ns) const;
  // A window's dump is complete at `path`: the oldest files beyond `keep` are removed. Returns
  // how many were removed.
  size_t closed(const std::string& path);

 private:
  std::string pattern_;
  size_t keep_;
  uint64_t pid_;
  std::deque<std::string> written_;
};

// "20261126T045000Z" for `unix_ns`.
std::string utc_timestamp(uint64_t unix_ns);

}  // namespace inprof::internal

#endif  // INPROF_LIB_WINDOW_FILES_H_
