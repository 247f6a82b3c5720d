#include "wait_descriptor_linux.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "seccomp_state_linux.h"

namespace inprof::internal {

bool waits_on_descriptor(int64_t number) {
  switch (number) {
    case SYS_read:
    case SYS_write:
    case SYS_readv:
    case SYS_writev:
    case SYS_pread64:
    case SYS_pwrite64:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_recvmmsg:
    case SYS_sendto:
    case SYS_sendmsg:
    case SYS_sendmmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_connect:
    case SYS_splice:
    case SYS_flock:
    case SYS_fcntl:
      return true;
    default:
      return false;
  }
}

DescriptorKind descriptor_kind(uint64_t fd) {
  if (fd > INT32_MAX || seccomp_filtered()) return kDescriptorUnknown;
  char path[40];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%llu", static_cast<unsigned long long>(fd));
  char target[64];
  const int saved = errno;
  const ssize_t n = readlink(path, target, sizeof(target) - 1);
  errno = saved;
  if (n <= 0) return kDescriptorUnknown;
  target[n] = '\0';
  auto starts = [&](const char* prefix) {
    return std::strncmp(target, prefix, std::strlen(prefix)) == 0;
  };
  if (starts("socket:")) return kDescriptorSocket;
  if (starts("pipe:")) return kDescriptorPipe;
  if (starts("anon_inode:[eventfd]")) return kDescriptorEventfd;
  if (starts("anon_inode:[eventpoll]")) return kDescriptorEpoll;
  if (starts("anon_inode:[timerfd]")) return kDescriptorTimerfd;
  if (starts("anon_inode:[signalfd]")) return kDescriptorSignalfd;
  if (starts("/dev/")) return kDescriptorDevice;
  if (starts("/")) return kDescriptorFile;
  return kDescriptorOther;
}

}  // namespace inprof::internal
