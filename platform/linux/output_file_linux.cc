// OutputFile on POSIX: open(2) with O_NOFOLLOW, mode 0600, regular files only.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "output_file.h"

namespace inprof::internal {
namespace {

Status os_error(const std::string& what, const std::string& path, int err) {
  return Status::error(Status::Code::kOutputError, what + " '" + path + "': " + std::strerror(err));
}

class PosixOutputFile final : public OutputFile {
 public:
  PosixOutputFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixOutputFile() override { (void)close(); }

  Status write(std::span<const uint8_t> bytes) override {
    if (fd_ < 0) return Status::error(Status::Code::kOutputError, "write after close");
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return os_error("cannot write", path_, errno);
      }
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return {};
  }

  Status close() override {
    if (fd_ < 0) return {};
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && errno != EINTR) return os_error("cannot close", path_, errno);
    return {};
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

std::unique_ptr<OutputFile> OutputFile::create(const std::string& path, Status* status) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *status = errno == ELOOP
                  ? Status::error(Status::Code::kOutputError,
                                  "refusing to write '" + path + "': it is a symbolic link")
                  : os_error("cannot create", path, errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *status = Status::error(Status::Code::kOutputError,
                            "refusing to write '" + path + "': not a regular file");
    return nullptr;
  }
  // An existing file keeps its mode through O_TRUNC: make it private as promised.
  if (fchmod(fd, 0600) != 0) {
    int err = errno;
    ::close(fd);
    *status = os_error("cannot make private", path, err);
    return nullptr;
  }
  *status = {};
  return std::make_unique<PosixOutputFile>(fd, path);
}

}  // namespace inprof::internal
