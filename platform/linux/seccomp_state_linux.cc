#include "seccomp_state_linux.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

namespace inprof::internal {
bool seccomp_filtered() {
  __attribute__((tls_model("initial-exec"))) thread_local bool filtered = false;
  if (filtered) return true;
  const int saved = errno;
  const int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  // EINVAL: a kernel without seccomp. Any other refusal comes from a filter.
  filtered = mode > 0 || (mode < 0 && errno != EINVAL);
  errno = saved;
  return filtered;
}

}  // namespace inprof::internal
