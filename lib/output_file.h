// Where a dump's bytes go: a file created privately (mode 0600, never through a symbolic link).
// Implemented per OS under platform/<os>/.
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
  // Creates (or truncates) `path`. A symbolic link or a non-regular file at `path` is refused.
  static std::unique_ptr<OutputFile> create(const std::string& path, Status* status);

  virtual ~OutputFile() = default;
  // Writes all of `bytes`, retrying short writes; a failure says why (disk full, ...).
  virtual Status write(std::span<const uint8_t> bytes) = 0;
  // Flushes to the OS and closes; further writes fail.
  virtual Status close() = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_OUTPUT_FILE_H_
