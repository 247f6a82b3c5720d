// Where a dump's bytes go: a file created privately (mode 0600, never through a symbolic link),
// held against other processes while it is written. Implemented per OS under platform/<os>/,
// except create_unshared (output_file.cc).
#ifndef INPROF_LIB_OUTPUT_FILE_H_
#define INPROF_LIB_OUTPUT_FILE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "inprof/profiler.h"

namespace inprof::internal {

class OutputFile {
 public:
  // Creates (or truncates) `path`. A symbolic link or a non-regular file at `path` is refused,
  // and so is a file another live process is writing (`*held_elsewhere` then says so).
  static std::unique_ptr<OutputFile> create(const std::string& path, Status* status,
                                            bool* held_elsewhere = nullptr);
  // create(), except that a path another live process is writing is never shared: this process
  // writes pid_suffixed_path(path) instead, says so once on stderr, and `*actual_path` is set.
  // A dump an earlier image of this process left at `path` (written_by_earlier_image()) is kept
  // too: this one writes the first free exec_suffixed_path() and `*earlier_image` (if given)
  // names the earlier image's dump, for its end (kExecEnd) to be written; else it is emptied.
  static std::unique_ptr<OutputFile> create_unshared(const std::string& path, Status* status,
                                                     std::string* actual_path,
                                                     std::string* earlier_image = nullptr);
  // Opens an existing regular file to append (never through a link, never creating it); null
  // where it cannot (or per OS, where not supported).
  static std::unique_ptr<OutputFile> append(const std::string& path);
  // "dir/app.inprof" -> "dir/app-PID.inprof"; "dir/app" -> "dir/app-PID".
  static std::string pid_suffixed_path(const std::string& path, uint64_t pid);
  // "dir/app.inprof" -> "dir/app-execN.inprof".
  static std::string exec_suffixed_path(const std::string& path, int n);
  // Whether `path` is a dump this same process wrote since it started, under an earlier image
  // (before an execve(): same process id, `%p` in the path, a wrapper script that execs the real
  // program). Per OS; false where unknown.
  static bool written_by_earlier_image(const std::string& path);

  virtual ~OutputFile() = default;
  // Writes all of `bytes`, retrying short writes; a failure says why (disk full, ...).
  virtual Status write(std::span<const uint8_t> bytes) = 0;
  // Flushes to the OS and closes; further writes fail.
  virtual Status close() = 0;
  // The descriptor a thread given a private descriptor table keeps (-1: none, or not a POSIX OS).
  virtual int descriptor() const { return -1; }
  // Called on the thread that created the file, once the writing thread keeps the file in a
  // table of its own: the creator's copy is closed (checked first: only if still this file).
  virtual void moved_to_private_table() {}
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_OUTPUT_FILE_H_
