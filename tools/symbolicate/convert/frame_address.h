// How a frame's address is read (and written: hex_u64, text_util.h): shared by the stack
// converter's two halves.
#ifndef INPROF_TOOLS_SYMBOLICATE_CONVERT_FRAME_ADDRESS_H_
#define INPROF_TOOLS_SYMBOLICATE_CONVERT_FRAME_ADDRESS_H_

#include <cstdint>

namespace inprof::symbolicate {

// The address of the instruction a frame was executing. Only the leaf's is exact: every other
// frame holds a return address, just past its call, which may already be the next line, another
// inline level, the next function or past the module's end; the call's last byte is one before
// it. It is also the address the Firefox Profiler expects of a stack-walked frame.
inline uint64_t code_address(uint64_t address, bool leaf) {
  return leaf || address == 0 ? address : address - 1;
}

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CONVERT_FRAME_ADDRESS_H_
