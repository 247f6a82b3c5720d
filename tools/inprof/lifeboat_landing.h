// Finishing the dump of a process that ended without stopping its session, from the lifeboat it
// handed `inprof record` (lib/session/lifeboat.h).
#ifndef INPROF_TOOLS_INPROF_LIFEBOAT_LANDING_H_
#define INPROF_TOOLS_INPROF_LIFEBOAT_LANDING_H_

#include <cstdint>
#include <span>
#include <string>

namespace inprof::launcher {

struct Landing {
  bool landed = false;    // the dump now ends with what the boat held, and its end
  bool finished = false;  // nothing to do: the session ended its dump itself
  uint64_t records = 0;   // written from the boat
  std::string dump_path;  // the dump it belongs to
  std::string error;      // why it could not be landed (a damaged boat, a dump gone or replaced)
};

// Reads the header only: the process the boat came from (0: not a boat), and whether its session
// finished its dump.
uint64_t lifeboat_pid(std::span<const uint8_t> memory);
bool lifeboat_finished(std::span<const uint8_t> memory);

// `memory` is the whole boat as the process left it (it must be gone, or have replaced its image:
// nothing writes it any more); `end_ns`, CLOCK_MONOTONIC when its end was seen. Trusts nothing
// in the boat: every size and offset is checked, the dump must be the very file it named.
Landing land_lifeboat(std::span<const uint8_t> memory, uint64_t end_ns);

}  // namespace inprof::launcher

#endif  // INPROF_TOOLS_INPROF_LIFEBOAT_LANDING_H_
