#include "owned_fd_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace inprof::internal {

bool identity_of(int fd, FileIdentity* out) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return false;
  out->device = static_cast<uint64_t>(st.st_dev);
  out->inode = static_cast<uint64_t>(st.st_ino);
  return true;
}

OwnedFd::OwnedFd(int directory, const char* path, int flags, mode_t mode) {
  int fd;
  do {
    fd = ::openat(directory, path, flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return;
  checked_ = !on_private_descriptor_table();
  if (checked_ && !identity_of(fd, &identity_)) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return;
  }
  fd_ = fd;
}

OwnedFd::OwnedFd(OwnedFd&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), checked_(other.checked_), identity_(other.identity_) {}

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    checked_ = other.checked_;
    identity_ = other.identity_;
  }
  return *this;
}

bool OwnedFd::still_ours() {
  if (fd_ < 0) return false;
  if (!checked_) return true;
  FileIdentity now;
  if (identity_of(fd_, &now) && now == identity_) return true;
  fd_ = -1;
  return false;
}

ssize_t OwnedFd::read(void* buf, size_t size) { return pread(buf, size, -1); }

ssize_t OwnedFd::pread(void* buf, size_t size, off_t offset) {
  const int fd = checked_fd();
  if (fd < 0) {
    errno = EBADF;
    return -1;
  }
  ssize_t n;
  do {
    n = offset < 0 ? ::read(fd, buf, size) : ::pread(fd, buf, size, offset);
  } while (n < 0 && errno == EINTR);
  return n;
}

void OwnedFd::close() {
  if (still_ours()) ::close(fd_);
  fd_ = -1;
}

ssize_t read_small_file(const char* path, char* buf, size_t size) {
  return read_small_file_at(AT_FDCWD, path, buf, size);
}

ssize_t read_small_file_at(int directory, const char* path, char* buf, size_t size) {
  if (size == 0) return -1;
  OwnedFd file(directory, path, O_RDONLY);
  if (!file.is_open()) return -1;
  size_t total = 0;
  while (total + 1 < size) {
    const size_t wanted = size - 1 - total;
    const ssize_t n = file.read(buf + total, wanted);
    if (n < 0) return -1;
    total += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < wanted) break;
  }
  buf[total] = '\0';
  return static_cast<ssize_t>(total);
}

}  // namespace inprof::internal
