// How a frame's address is read and written: shared by the stack converter's two halves.
#ifndef INPROF_TOOLS_SYMBOLICATE_CONVERT_FRAME_ADDRESS_H_
#define INPROF_TOOLS_SYMBOLICATE_CONVERT_FRAME_ADDRESS_H_

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace inprof::symbolicate {

// The address of the instruction a frame was executing. Only the leaf's is exact: every other
// frame holds a return address, just past its call, which may already be the next line, another
// inline level, the next function or past the module's end; the call's last byte is one before
// it. It is also the address the Firefox Profiler expects of a stack-walked frame.
inline uint64_t code_address(uint64_t address, bool leaf) {
  return leaf || address == 0 ? address : address - 1;
}

inline std::string hex_u64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CONVERT_FRAME_ADDRESS_H_
