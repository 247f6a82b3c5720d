#include "convert/track_names.h"

#include "text_util.h"

namespace inprof::symbolicate {
namespace {

// TASK_COMM_LEN - 1: what the kernel keeps of a name.
constexpr size_t kCommBytes = 15;

}  // namespace

TrackNames::TrackNames(const internal::ProcessRecord* process) {
  if (!process) return;
  const std::string exe = basename_of(process->executable);
  const std::string argv0 =
      process->command_line.empty() ? std::string() : basename_of(process->command_line[0]);
  process_name_ = exe.empty() ? argv0 : exe;
  // The comm is the file name execve was given (argv[0]'s, usually; a symlink such as python3
  // keeps its own name), cut to 15 bytes.
  for (const std::string& name : {exe, argv0}) {
    if (!name.empty()) default_names_.push_back(name.substr(0, kCommBytes));
  }
}

bool TrackNames::is_default_name(const std::string& name) const {
  for (const std::string& d : default_names_) {
    if (name == d) return true;
  }
  return false;
}

std::string TrackNames::thread_name(uint64_t tid, const std::string& recorded, bool is_main) const {
  const bool unnamed = recorded.empty() || is_default_name(recorded);
  if (!unnamed) return recorded;
  if (is_main && !process_name_.empty()) return process_name_;
  const std::string& prefix = process_name_.empty() ? std::string("Thread") : process_name_;
  return prefix + " " + std::to_string(tid);
}

}  // namespace inprof::symbolicate
