// The names the viewer shows for the process and its threads. Linux keeps only the first 15
// bytes of a thread's name (the kernel's comm), and a thread nobody named inherits the process's
// comm: such names are replaced by the process's full name (the main thread) or by the process's
// name and the thread id (any other thread). A name given with inprof::set_thread_name is
// recorded whole and kept.
#ifndef INPROF_TOOLS_SYMBOLICATE_TRACK_NAMES_H_
#define INPROF_TOOLS_SYMBOLICATE_TRACK_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dump/dump_records.h"

namespace inprof::symbolicate {

class TrackNames {
 public:
  // `process` may be null (a dump without a process record).
  explicit TrackNames(const internal::ProcessRecord* process);

  // The executable's file name (else argv[0]'s); empty if the dump names neither.
  const std::string& process_name() const { return process_name_; }
  // The name of thread `tid` whose recorded name is `recorded` (empty: none was recorded).
  std::string thread_name(uint64_t tid, const std::string& recorded, bool is_main) const;

 private:
  // Whether `name` is what the kernel gives a thread nobody named.
  bool is_default_name(const std::string& name) const;

  std::string process_name_;
  std::vector<std::string> default_names_;  // the comm values the process may have
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_TRACK_NAMES_H_
