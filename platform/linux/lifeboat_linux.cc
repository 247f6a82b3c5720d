// The lifeboat's memory on Linux: a memfd mapped shared, handed to `inprof record` over its
// abstract UNIX socket (SCM_RIGHTS) and closed, so that the process holds no descriptor for it;
// the mapping alone keeps it, and the launcher's copy of the descriptor keeps it after the
// process is gone. Everything here runs once per session, at its start, on the starting thread.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "seccomp_state_linux.h"
#include "session/lifeboat.h"

namespace inprof::internal {

LifeboatMemory create_lifeboat_memory(size_t bytes) {
  // memfd_create and socket are calls only the profiler makes: under a filter they may be fatal.
  if (seccomp_filtered()) return {};
  const int fd = memfd_create("inprof-lifeboat", MFD_CLOEXEC);
  if (fd < 0) return {};
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return {};
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    return {};
  }
  return {base, fd};
}

bool hand_over_lifeboat(int handle, const std::string& dock) {
  bool sent = false;
  if (handle >= 0 && !dock.empty() && !seccomp_filtered() &&
      dock.size() < sizeof(sockaddr_un::sun_path) - 1) {
    // Non-blocking: a launcher that does not answer costs the boat, never the program's time.
    const int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (sock >= 0) {
      sockaddr_un address = {};
      address.sun_family = AF_UNIX;
      std::memcpy(address.sun_path + 1, dock.data(), dock.size());  // abstract: no file
      const socklen_t length =
          static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + dock.size());
      if (connect(sock, reinterpret_cast<const sockaddr*>(&address), length) == 0) {
        char byte = 'L';
        iovec iov = {&byte, 1};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        msghdr message = {};
        message.msg_iov = &iov;
        message.msg_iovlen = 1;
        message.msg_control = control;
        message.msg_controllen = sizeof(control);
        cmsghdr* cmsg = CMSG_FIRSTHDR(&message);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(cmsg), &handle, sizeof(int));
        sent = sendmsg(sock, &message, MSG_NOSIGNAL) == 1;
      }
      close(sock);
    }
  }
  if (handle >= 0) close(handle);
  return sent;
}

void release_lifeboat_memory(void* base, size_t bytes, size_t keep) {
  if (!base) return;
  if (keep < bytes) (void)madvise(static_cast<char*>(base) + keep, bytes - keep, MADV_REMOVE);
  munmap(base, bytes);
}

bool dump_identity(int descriptor, uint64_t* device, uint64_t* inode, char* path, size_t size) {
  struct stat st;
  if (fstat(descriptor, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *device = st.st_dev;
  *inode = st.st_ino;
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", descriptor);
  const ssize_t n = readlink(link, path, size - 1);
  if (n <= 0 || path[0] != '/') return false;
  path[n] = '\0';
  return true;
}

}  // namespace inprof::internal
