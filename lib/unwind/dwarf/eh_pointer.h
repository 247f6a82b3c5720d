// Pointers in .eh_frame and .eh_frame_hdr, stored in one of the DW_EH_PE encodings: a value
// format (fixed-size, LEB128) applied to a base (absolute, the field's own address, ...).
#ifndef INPROF_LIB_DWARF_EH_POINTER_H_
#define INPROF_LIB_DWARF_EH_POINTER_H_

#include <cstdint>

#include "unwind/dwarf/memory_view.h"

namespace inprof::internal {

// Bases for the relative encodings; 0 where the caller does not know one (then such a pointer
// fails to read rather than being guessed).
struct PointerBases {
  uint64_t text = 0;
  uint64_t data = 0;
  uint64_t function = 0;
};

// Reads a pointer encoded as `encoding` at the reader's position (an indirect one is followed
// through the view). DW_EH_PE_omit is not a pointer: it fails.
bool read_encoded_pointer(MemoryReader& reader, uint8_t encoding, const PointerBases& bases,
                          uint64_t* out);

// The size of a fixed-size encoding's value (0 for LEB128 and anything unknown).
int encoded_size(uint8_t encoding);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_EH_POINTER_H_
