// Facts about the machine a profile was taken on, for the viewer's "Profile Info": read once when
// a session starts (files and system calls, never on the sampling path).
#ifndef INPROF_LIB_SYSTEM_FACTS_H_
#define INPROF_LIB_SYSTEM_FACTS_H_

#include "dump/dump_records.h"

namespace inprof::internal {

// Fills the machine's fields of `process` (os_name ... memory_bytes); what cannot be read stays
// empty or 0.
void read_system_facts(ProcessRecord& process);

}  // namespace inprof::internal

#endif  // INPROF_LIB_SYSTEM_FACTS_H_
