// The unwinder the macOS build uses for every method: frame pointers. arm64 macOS always keeps
// them and Apple's clang keeps them on x86-64 by default; most functions there have only compact
// unwind info (__unwind_info), which inprof does not read yet, so DWARF CFI alone would not do.
#include "unwind/frame_pointer_unwinder.h"
#include "unwind/os_unwinder.h"

namespace inprof::internal {

std::unique_ptr<Unwinder> create_os_unwinder() { return std::make_unique<FramePointerUnwinder>(); }

}  // namespace inprof::internal
