// OutputFile on POSIX: opened by open_output_file (no link, regular files only, mode 0600, locked
// against other processes for the file's life).
#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "output_file.h"
#include "output_open_linux.h"

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

std::unique_ptr<OutputFile> OutputFile::create(const std::string& path, Status* status,
                                               bool* held_elsewhere) {
  std::string error;
  bool held = false;
  const int fd = open_output_file(path, "", &error, &held);
  if (held_elsewhere) *held_elsewhere = held;
  if (fd < 0) {
    *status = Status::error(Status::Code::kOutputError, error);
    return nullptr;
  }
  *status = {};
  return std::make_unique<PosixOutputFile>(fd, path);
}

}  // namespace inprof::internal
