// A descriptor the profiler opened, in a process whose own code may close or replace any
// descriptor at any moment (close_range(3, ~0U), a daemon's close loop, dup2 onto any number).
// The number alone proves nothing: before every read, write or close the descriptor is checked to
// still be the open file it was (device and inode, from fstat), and a descriptor that is not is
// never touched again: closing it would close the program's file, reading it would take the
// program's data. What is left is the window between the check and the call, a few instructions.
// Opened by a thread with a descriptor table of its own (use_private_descriptor_table), nothing
// of the program's can reach it, and it is not checked (four fstat calls per /proc file read were
// most of what a burst of new threads cost the sampler).
#ifndef INPROF_PLATFORM_LINUX_OWNED_FD_LINUX_H_
#define INPROF_PLATFORM_LINUX_OWNED_FD_LINUX_H_

#include <fcntl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace inprof::internal {

struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

class OwnedFd {
 public:
  OwnedFd() = default;
  // open(2) with O_CLOEXEC added; is_open() says whether it worked (errno is kept).
  OwnedFd(const char* path, int flags, mode_t mode = 0) : OwnedFd(AT_FDCWD, path, flags, mode) {}
  // openat(2): `path` relative to the open directory `directory` (AT_FDCWD: the current one).
  OwnedFd(int directory, const char* path, int flags, mode_t mode = 0);
  ~OwnedFd() { close(); }
  OwnedFd(OwnedFd&& other) noexcept;
  OwnedFd& operator=(OwnedFd&& other) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const FileIdentity& identity() const { return identity_; }
  // Whether the number still names the file opened. Once false, the number is forgotten (never
  // closed: it may be the program's now).
  bool still_ours();
  // The descriptor after a still_ours() check; -1 when it is not ours any more.
  int checked_fd() { return still_ours() ? fd_ : -1; }
  // read(2) after the check, retrying EINTR; -1 with errno EBADF when not ours.
  ssize_t read(void* buf, size_t size);
  // pread(2) likewise (offset -1: read(2)): a /proc file read again from its start shows the
  // kernel's state anew.
  ssize_t pread(void* buf, size_t size, off_t offset);
  // Closes it if it is still ours; forgets it either way.
  void close();

 private:
  int fd_ = -1;
  bool checked_ = true;  // false on the opener's own table
  FileIdentity identity_;
};

// The identity of an open descriptor, or false.
bool identity_of(int fd, FileIdentity* out);

// Whether the calling thread has a descriptor table of its own (use_private_descriptor_table).
bool on_private_descriptor_table();

// Reads a small file (/proc) into `buf`, NUL-terminated; its length, or -1. The descriptor lives
// only for the call, and is checked before each use. A read shorter than asked ends it: a /proc
// file of one record gives it whole to a read large enough.
ssize_t read_small_file(const char* path, char* buf, size_t size);
// The same, `path` relative to the open directory `directory`.
ssize_t read_small_file_at(int directory, const char* path, char* buf, size_t size);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_OWNED_FD_LINUX_H_
