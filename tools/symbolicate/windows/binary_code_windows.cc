// Windows samples are unwound with RtlVirtualUnwind and need no leaf fix-up, and no system-call
// check reads their code: no binary answers on its own (binary_code.h).
#include "symbolize/binary_code.h"

namespace inprof::symbolicate {

std::unique_ptr<BinaryCode> BinaryCode::open(const ModuleFiles&) { return nullptr; }

}  // namespace inprof::symbolicate
