// Platforms without kernel sampling rings: nothing is ever refused.
#include "sampling/kernel_ring_refusals.h"

namespace inprof::internal {

KernelRingRefusals kernel_ring_refusals() { return {}; }

}  // namespace inprof::internal
