// A PE image's identity and layout, read from its headers where the image is mapped: by the
// loader (a module of this process) or as a file mapped as an image (symbolicate checking that a
// file is the module a dump recorded). One reader for both, so the two always agree.
#ifndef INPROF_PLATFORM_WINDOWS_PE_IMAGE_WINDOWS_H_
#define INPROF_PLATFORM_WINDOWS_PE_IMAGE_WINDOWS_H_

#include <cstdint>

#include "sampling/module_lister.h"

namespace inprof::internal {

// Fills `m` from the headers of the x64 image mapped at `base`:
// - build_id: the CodeView (RSDS) record's GUID (16 bytes, as stored) then its age (4 bytes,
//   little-endian) — the PDB debug id, which MSVC always writes and MinGW's ld writes with
//   --build-id; without one, the PE code id: TimeDateStamp then SizeOfImage (4 + 4 bytes, LE).
//   Lengths 20 and 8 tell the two apart.
// - start/end: the mapping; load_bias: base minus the preferred ImageBase, so that an address
//   minus the bias is the virtual address the debug information (DWARF or PDB) uses;
//   code_ranges: the executable sections.
// False if the headers are not those of a 64-bit PE image. The mapping must have been made by
// the loader or as an image section (which validated the headers).
bool describe_pe_image(const uint8_t* base, ModuleInfo& m);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_WINDOWS_PE_IMAGE_WINDOWS_H_
