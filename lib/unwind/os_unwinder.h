// The unwinder the OS provides, for platforms whose binaries carry no DWARF CFI for our own
// unwinder to read: Windows x64 unwinds with RtlVirtualUnwind over the PE's .pdata/.xdata.
// Built only where INPROF_OS_UNWINDER is defined (CMakeLists.txt); implemented under
// platform/<os>/. Like every Unwinder, it runs on the copy, after the thread has resumed.
#ifndef INPROF_LIB_OS_UNWINDER_H_
#define INPROF_LIB_OS_UNWINDER_H_

#include <memory>

#include "unwind/unwinder.h"

namespace inprof::internal {

std::unique_ptr<Unwinder> create_os_unwinder();

}  // namespace inprof::internal

#endif  // INPROF_LIB_OS_UNWINDER_H_
